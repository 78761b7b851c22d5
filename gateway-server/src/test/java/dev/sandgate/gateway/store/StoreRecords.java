package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.spi.Identifiers;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/** Records and helpers for store tests. */
final class StoreRecords {
    private StoreRecords() {}

    /** Waits (up to 30 s) until {@code count} writes queue behind the store's busy writer. */
    static void awaitQueued(SqliteStore store, int count) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (store.queuedWrites() < count) {
            assertThat(System.nanoTime()).as("writes queued in time").isLessThan(deadline);
            Thread.sleep(5);
        }
    }

    /**
     * Starts a write on {@code threads} that runs {@code work}, counts {@code holding} down and holds the writer until
     * {@code release} opens, so that later writes queue.
     */
    static Future<?> holdWriter(
            Store store,
            ExecutorService threads,
            Consumer<StoreTransaction> work,
            CountDownLatch holding,
            CountDownLatch release) {
        return threads.submit(() -> store.write(tx -> {
            work.accept(tx);
            holding.countDown();
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return null;
        }));
    }

    /** A READY sandbox named {@code name} in workspace "team", with a fresh id. */
    static SandboxRecord sandbox(String name) {
        return sandbox("team", name);
    }

    /** A READY sandbox named {@code name} in {@code workspace}, with a fresh id. */
    static SandboxRecord sandbox(String workspace, String name) {
        Instant now = Instant.parse("2026-01-01T00:00:00Z");
        String digest = PolicyDocument.DEFAULT.digest();
        return new SandboxRecord(
                Identifiers.newSandboxId(),
                workspace,
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
                new StoredSpec("img", List.of("sh"), List.of(), Map.of("K", "v"), 0, 0),
                Map.of("app", "x"),
                List.of(),
                Optional.empty(),
                0,
                now,
                now,
                Optional.empty(),
                Optional.empty());
    }

    /** A READY sandbox named {@code name} in workspace "team" with {@code expiry} and the lease of generation 1. */
    static SandboxRecord expiring(String name, ExpiryRecord expiry, Instant claimTime) {
        SandboxRecord plain = sandbox("team", name);
        return new SandboxRecord(
                plain.id(),
                plain.workspace(),
                plain.name(),
                plain.phase(),
                1,
                claimTime,
                plain.launchRevision(),
                plain.launchDigest(),
                plain.runtimeGeneration(),
                plain.runtimeState(),
                plain.runtimeDetail(),
                plain.policyMode(),
                plain.admittedRevision(),
                plain.admittedDigest(),
                plain.spec(),
                plain.labels(),
                plain.conditions(),
                plain.pending(),
                0,
                claimTime,
                claimTime,
                Optional.of(expiry),
                Optional.of(expiry.leaseFor(1, claimTime)));
    }
}
