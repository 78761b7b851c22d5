package dev.sandgate.gateway.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.gateway.metrics.GatewayObserver;
import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.gateway.store.PolicyMode;
import dev.sandgate.gateway.store.PostgresStore;
import dev.sandgate.gateway.store.SandboxPhase;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.StoredSpec;
import dev.sandgate.gateway.testing.TestPostgres;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.testing.EngineTest;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The change-log follower on a real PostgreSQL: the order in which it delivers what replicas commit. */
class ChangeFollowerTest {
    @Test
    @EngineTest
    @DisplayName("a change whose transaction took its sequence number first but commits after a later one is held"
            + " for, then delivered before it: nothing is delivered out of sequence order")
    void holeIsHeldUntilItsTransactionCommits() throws Exception {
        PostgresStore.Settings settings = TestPostgres.settings();
        ExecutorService threads = Executors.newSingleThreadExecutor();
        try (PostgresStore first = new PostgresStore(settings);
                PostgresStore second = new PostgresStore(settings)) {
            SandboxRecord x = first.write(tx -> tx.insertSandbox(sandbox("hole-x")));
            SandboxRecord y = first.write(tx -> tx.insertSandbox(sandbox("hole-y")));
            WatchHub hub = new WatchHub();
            List<SandboxChange> delivered = new CopyOnWriteArrayList<>();
            var unused = hub.register(change -> {
                // Only the changes of this test's two sandboxes (other tests may share the database).
                if (change.sandbox().id().equals(x.id())
                        || change.sandbox().id().equals(y.id())) {
                    delivered.add(change);
                }
            });
            try (ChangeFollower follower =
                    new ChangeFollower(first::openChangeLog, hub, () -> false, () -> GatewayObserver.NONE)) {
                CountDownLatch taken = new CountDownLatch(1);
                CountDownLatch commit = new CountDownLatch(1);
                // x's update takes its sequence number and waits, uncommitted, while y's commits with a larger one.
                Future<?> held = threads.submit(() -> first.write(tx -> {
                    tx.updateSandbox(x.toBuilder().runtime(1, "RUNNING", "x").build());
                    taken.countDown();
                    await(commit);
                    return null;
                }));
                assertThat(taken.await(30, TimeUnit.SECONDS)).isTrue();
                second.write(tx -> tx.updateSandbox(
                        y.toBuilder().runtime(1, "RUNNING", "y").build()));
                awaitUntil(() -> follower.holdingAt().isPresent());
                List<SandboxChange> whileHeld = List.copyOf(delivered);
                commit.countDown();
                held.get(30, TimeUnit.SECONDS);
                awaitUntil(() -> delivered.size() >= 2);

                assertThat(whileHeld).isEmpty();
                assertThat(delivered)
                        .extracting(change -> change.sandbox().runtimeDetail())
                        .containsExactly("x", "y");
                assertThat(delivered)
                        .allSatisfy(change -> assertThat(change.type()).isEqualTo(SandboxChange.Type.MODIFIED));
            }
        } finally {
            threads.shutdownNow();
        }
    }

    @Test
    @EngineTest
    @DisplayName("a hole is held while its transaction runs although that transaction took its id after the newest"
            + " ended one (PostgreSQL lists it neither as running nor above the snapshot's xmax)")
    void holeOfATransactionNewerThanTheNewestEndedIsHeld() throws Exception {
        PostgresStore.Settings settings = TestPostgres.settings();
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try (PostgresStore first = new PostgresStore(settings);
                PostgresStore second = new PostgresStore(settings)) {
            SandboxRecord x = first.write(tx -> tx.insertSandbox(sandbox("newer-x")));
            SandboxRecord y = first.write(tx -> tx.insertSandbox(sandbox("newer-y")));
            SandboxRecord z = first.write(tx -> tx.insertSandbox(sandbox("newer-z")));
            WatchHub hub = new WatchHub();
            List<SandboxChange> delivered = new CopyOnWriteArrayList<>();
            Set<String> mine = Set.of(x.id(), y.id(), z.id());
            var unused = hub.register(change -> {
                if (mine.contains(change.sandbox().id())) {
                    delivered.add(change);
                }
            });
            try (ChangeFollower follower =
                    new ChangeFollower(first::openChangeLog, hub, () -> false, () -> GatewayObserver.NONE)) {
                CountDownLatch olderBegun = new CountDownLatch(1);
                CountDownLatch newerTaken = new CountDownLatch(1);
                CountDownLatch commit = new CountDownLatch(1);
                // The older transaction takes its id (z's update) first; the newer one takes a larger id, then its
                // sequence number (x), and stays open; the older one takes a larger sequence number (y) and commits:
                // it is the newest ended transaction, below the newer one's id.
                Future<?> older = threads.submit(() -> second.write(tx -> {
                    tx.updateSandbox(z.toBuilder().runtime(1, "RUNNING", "z").build());
                    olderBegun.countDown();
                    await(newerTaken);
                    tx.updateSandbox(y.toBuilder().runtime(1, "RUNNING", "y").build());
                    return null;
                }));
                Future<?> newer = threads.submit(() -> {
                    await(olderBegun);
                    return first.write(tx -> {
                        tx.updateSandbox(
                                x.toBuilder().runtime(1, "RUNNING", "x").build());
                        newerTaken.countDown();
                        await(commit);
                        return null;
                    });
                });
                older.get(30, TimeUnit.SECONDS);
                // The follower reads again every few milliseconds while it holds at a hole: a hole it may pass is
                // passed at the next read.
                awaitUntil(() -> !delivered.isEmpty());
                long readsAfterZ = follower.reads();
                awaitUntil(() -> follower.reads() >= readsAfterZ + 5);
                List<String> whileHeld = details(delivered);
                boolean held = follower.holdingAt().isPresent();
                commit.countDown();
                newer.get(30, TimeUnit.SECONDS);
                awaitUntil(() -> delivered.size() >= 3);

                assertThat(whileHeld).containsExactly("z");
                assertThat(held).isTrue();
                assertThat(details(delivered)).containsExactly("z", "x", "y");
            }
        } finally {
            threads.shutdownNow();
        }
    }

    private static List<String> details(List<SandboxChange> changes) {
        return changes.stream().map(change -> change.sandbox().runtimeDetail()).toList();
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits (up to 30 s) for {@code condition}. */
    private static void awaitUntil(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("condition met in time").isLessThan(deadline);
            Thread.sleep(5);
        }
    }

    private static SandboxRecord sandbox(String name) {
        Instant now = Instant.parse("2026-01-01T00:00:00Z");
        String digest = PolicyDocument.DEFAULT.digest();
        return new SandboxRecord(
                Identifiers.newSandboxId(),
                "team",
                name + "-" + Identifiers.newSandboxId(),
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
                new StoredSpec("img", List.of("sh"), List.of(), Map.of("SECRET", "value"), 0, 0),
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
