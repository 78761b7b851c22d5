package dev.sandgate.gateway.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.gateway.store.PolicyMode;
import dev.sandgate.gateway.store.PostgresStore;
import dev.sandgate.gateway.store.ReplicaLease;
import dev.sandgate.gateway.store.SandboxPhase;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.gateway.store.StoredSpec;
import dev.sandgate.gateway.testing.TestPostgres;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.testing.EngineTest;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Replicas on one PostgreSQL: the leader lease moves to another replica when its holder stops renewing it, and a
 * sandbox's lease, taken over from a replica that stalled, fences that replica's writes. A replica "dies" here by
 * losing the store its coordination renews through: it renews nothing more, as a killed process would not.
 */
@EngineTest
class ReplicaCoordinationTest {
    private static final Duration SHORT = Duration.ofMillis(300);

    private PostgresStore.Settings settings;
    private PostgresStore shared;

    @BeforeEach
    void emptyDatabase() throws Exception {
        settings = TestPostgres.settings();
        shared = new PostgresStore(settings);
        TestPostgres.truncate(settings);
    }

    @AfterEach
    void close() {
        shared.close();
    }

    @Test
    @DisplayName("exactly one replica leads; when it dies another takes over at the next epoch, and the dead one's"
            + " epoch is refused")
    void leaderHandOver() {
        PostgresStore storeOfA = new PostgresStore(settings);
        ReplicaCoordination a = new ReplicaCoordination(storeOfA, "replica-a", SHORT);
        ReplicaCoordination b = new ReplicaCoordination(shared, "replica-b", SHORT);
        try {
            CountDownLatch aLeads = new CountDownLatch(1);
            AtomicInteger bLeads = new AtomicInteger();
            a.lead(aLeads::countDown, () -> {}, () -> {});
            Awaitility.await().until(() -> aLeads.getCount() == 0);
            b.lead(bLeads::incrementAndGet, () -> {}, () -> {});
            ReplicaLease first = a.leaderLease().orElseThrow();

            // Renewed every third of its time to live, A's lease outlives many of B's attempts.
            Awaitility.await().until(() -> renewedPastItsFirstTerm(first));
            assertThat(bLeads).hasValue(0);

            storeOfA.close(); // A dies: nothing renews its lease
            Awaitility.await().until(() -> bLeads.get() == 1);

            ReplicaLease second = b.leaderLease().orElseThrow();
            assertThat(second.epoch()).isEqualTo(first.epoch() + 1);
            boolean firstHolds = shared.write(tx -> tx.holdsLease(first));
            assertThat(firstHolds).isFalse();
        } finally {
            a.close();
            b.close();
        }
    }

    /** Whether the lease is still held after more than its time to live since it was taken. */
    private boolean renewedPastItsFirstTerm(ReplicaLease lease) {
        long takenAt = firstSeen.computeIfAbsent(lease.key(), key -> System.nanoTime());
        boolean held = shared.write(tx -> tx.holdsLease(lease));
        return held && System.nanoTime() - takenAt > 2 * SHORT.toNanos();
    }

    private final Map<String, Long> firstSeen = new java.util.concurrent.ConcurrentHashMap<>();

    @Test
    @DisplayName("a replica whose sandbox lease was taken over commits nothing: its write is refused as SANDBOX_BUSY,"
            + " and the new holder's goes through")
    void staleReplicaIsFenced() {
        SandboxRecord sandbox = shared.write(tx -> tx.insertSandbox(sandbox("fenced")));
        PostgresStore leasesOfA = new PostgresStore(settings);
        ReplicaCoordination a = new ReplicaCoordination(leasesOfA, "replica-a", SHORT);
        ReplicaCoordination b = new ReplicaCoordination(shared, "replica-b", SHORT);
        Store writesOfA = a.fence(shared);
        Store writesOfB = b.fence(shared);
        try {
            a.acquire(sandbox.id(), Duration.ZERO);
            assertThatThrownBy(() -> b.acquire(sandbox.id(), Duration.ZERO))
                    .isInstanceOfSatisfying(
                            GatewayException.class, e -> assertThat(e.reason()).isEqualTo(ErrorReason.SANDBOX_BUSY));

            leasesOfA.close(); // A stalls: its lease is no longer renewed
            b.acquire(sandbox.id(), Duration.ofMinutes(1));

            assertThat(b.heldLease(sandbox.id()).orElseThrow().epoch())
                    .isEqualTo(a.heldLease(sandbox.id()).orElseThrow().epoch() + 1);
            assertThatThrownBy(() -> writesOfA.write(tx -> tx.updateSandbox(
                            sandbox.toBuilder().runtime(1, "RUNNING", "from a").build())))
                    .isInstanceOfSatisfying(
                            GatewayException.class, e -> assertThat(e.reason()).isEqualTo(ErrorReason.SANDBOX_BUSY));
            writesOfB.write(tx -> tx.updateSandbox(
                    sandbox.toBuilder().runtime(1, "RUNNING", "from b").build()));
            assertThat(shared.sandbox(sandbox.id()).orElseThrow().runtimeDetail())
                    .isEqualTo("from b");
        } finally {
            a.close();
            b.close();
        }
    }

    @Test
    @DisplayName("a released sandbox lease is free at once for another replica")
    void releasedLeaseIsFree() {
        ReplicaCoordination a = new ReplicaCoordination(shared, "replica-a", Duration.ofMinutes(1));
        ReplicaCoordination b = new ReplicaCoordination(shared, "replica-b", Duration.ofMinutes(1));
        try {
            a.acquire("sb-1", Duration.ZERO);
            a.release("sb-1");
            b.acquire("sb-1", Duration.ZERO);

            assertThat(a.heldLease("sb-1")).isEmpty();
            assertThat(b.heldLease("sb-1").map(ReplicaLease::epoch)).contains(2L);
        } finally {
            a.close();
            b.close();
        }
    }

    private static SandboxRecord sandbox(String name) {
        Instant now = Instant.parse("2026-01-01T00:00:00Z");
        String digest = PolicyDocument.DEFAULT.digest();
        return new SandboxRecord(
                Identifiers.newSandboxId(),
                "team",
                name,
                SandboxPhase.READY,
                1,
                now,
                1,
                digest,
                1,
                "RUNNING",
                "",
                PolicyMode.LIVE,
                1,
                digest,
                new StoredSpec("img", List.of("sh"), List.of(), Map.of(), 0, 0),
                Map.of(),
                List.of(),
                Optional.empty(),
                0,
                now,
                now,
                Optional.empty(),
                Optional.empty());
    }
}
