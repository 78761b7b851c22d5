package dev.sandgate.gateway.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.sandgate.gateway.metrics.GatewayObserver;
import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.gateway.store.ChangeLog;
import dev.sandgate.gateway.store.PolicyMode;
import dev.sandgate.gateway.store.PostgresStore;
import dev.sandgate.gateway.store.SandboxPhase;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.StoredSpec;
import dev.sandgate.gateway.testing.TestPostgres;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.testing.EngineTest;
import dev.sandgate.testing.StoreSchema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.LongStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * The change-log follower on a real PostgreSQL (a schema of each test's own): the order in which it delivers what
 * replicas commit, across a lost connection and past a hole.
 */
class ChangeFollowerTest {
    private StoreSchema schema;
    private PostgresStore.Settings settings;

    private final Logger followerLog = (Logger) LoggerFactory.getLogger(ChangeFollower.class);
    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();
    private Level levelBefore;

    @BeforeEach
    void ownSchema() throws Exception {
        schema = StoreSchema.create();
        settings = TestPostgres.settings(schema);
        levelBefore = followerLog.getLevel();
        followerLog.setLevel(Level.INFO);
        logged.start();
        followerLog.addAppender(logged);
    }

    @AfterEach
    void dropSchema() {
        followerLog.detachAppender(logged);
        followerLog.setLevel(levelBefore);
        StoreSchema.closeIfAny(schema);
    }

    @Test
    @EngineTest
    @DisplayName("a change whose transaction took its sequence number first but commits after a later one is held"
            + " for, then delivered before it: nothing is delivered out of sequence order")
    void holeIsHeldUntilItsTransactionCommits() throws Exception {
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
                // x's update takes its sequence number and waits, uncommitted, while y's commits with a larger one.
                OpenUpdate held = new OpenUpdate(threads, first, x, "x");
                second.write(tx -> tx.updateSandbox(
                        y.toBuilder().runtime(1, "RUNNING", "y").build()));
                awaitUntil(() -> follower.holdingAt().isPresent());
                List<SandboxChange> whileHeld = List.copyOf(delivered);
                held.commit();
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
                    awaitQuietly(newerTaken);
                    tx.updateSandbox(y.toBuilder().runtime(1, "RUNNING", "y").build());
                    return null;
                }));
                Future<?> newer = threads.submit(() -> {
                    awaitQuietly(olderBegun);
                    return first.write(tx -> {
                        tx.updateSandbox(
                                x.toBuilder().runtime(1, "RUNNING", "x").build());
                        newerTaken.countDown();
                        awaitQuietly(commit);
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

    @Test
    @EngineTest
    @DisplayName("the follower's connection ended by the server (twice) while changes are committed: it reconnects"
            + " and delivers every change once, in order, none lost")
    void lostConnectionLosesNothing() throws Exception {
        ExecutorService threads = Executors.newSingleThreadExecutor();
        try (PostgresStore store = new PostgresStore(settings)) {
            SandboxRecord x = store.write(tx -> tx.insertSandbox(sandbox("lost")));
            WatchHub hub = new WatchHub();
            List<Long> delivered = new CopyOnWriteArrayList<>();
            var unused = hub.register(change -> delivered.add(change.sandbox().resourceVersion()));
            // The server process of every connection the follower opens: the first, then one per reconnection.
            List<Integer> backends = new CopyOnWriteArrayList<>();
            Supplier<ChangeLog> connect = () -> {
                ChangeLog log = store.openChangeLog();
                backends.add(log.backendPid());
                return log;
            };
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong written = new AtomicLong(x.resourceVersion());
            try (ChangeFollower follower = new ChangeFollower(connect, hub, () -> false, () -> GatewayObserver.NONE)) {
                // One writer commits update after update of x until told to stop: versions 2, 3, ...
                Future<?> writing = threads.submit(() -> {
                    SandboxRecord current = x;
                    while (!stop.get()) {
                        SandboxRecord next = current.toBuilder()
                                .runtime(1, "RUNNING", "v" + (current.resourceVersion() + 1))
                                .build();
                        current = store.write(tx -> tx.updateSandbox(next));
                        written.set(current.resourceVersion());
                    }
                    return null;
                });
                for (int kill = 1; kill <= 2; kill++) {
                    int seen = delivered.size();
                    await().atMost(Duration.ofSeconds(30)).until(() -> delivered.size() > seen + 20);
                    terminate(backends.getLast());
                    int connections = kill + 1;
                    await().atMost(Duration.ofSeconds(30)).until(() -> backends.size() == connections);
                }
                int seen = delivered.size();
                await().atMost(Duration.ofSeconds(30)).until(() -> delivered.size() > seen + 20);
                stop.set(true);
                writing.get(30, TimeUnit.SECONDS);
                // The last version written is the last delivered: whatever came before it is in the list by now.
                await().atMost(Duration.ofSeconds(30)).until(() -> delivered.contains(written.get()));

                assertThat(backends).doesNotHaveDuplicates().hasSize(3);
                assertThat(delivered)
                        .as("every version of x after its insert, once and in order")
                        .isEqualTo(
                                LongStream.rangeClosed(2, written.get()).boxed().toList());
                assertThat(logged.list)
                        .filteredOn(event -> event.getFormattedMessage().contains("reconnected"))
                        .hasSize(2);
            }
        } finally {
            threads.shutdownNow();
        }
    }

    private static List<String> details(List<SandboxChange> changes) {
        return changes.stream().map(change -> change.sandbox().runtimeDetail()).toList();
    }

    @Test
    @EngineTest
    @DisplayName("a transaction that took a sequence number and stays open past the hole cap: delivery holds, then"
            + " passes the hole with a warning and a capped count, and that row, committed later, is never delivered"
            + " (the known cost of the cap)")
    void holeOpenPastTheCapIsPassedAndItsRowNeverDelivered() throws Exception {
        ExecutorService threads = Executors.newSingleThreadExecutor();
        // Delivery, the warning and the count, in the follower's order.
        List<String> events = new CopyOnWriteArrayList<>();
        GatewayObserver observer = new GatewayObserver() {
            @Override
            public void watchLogHolesSkipped(long count, boolean atTimeCap) {
                events.add("skipped " + count + (atTimeCap ? " at the cap" : " ended"));
            }
        };
        try (PostgresStore first = new PostgresStore(settings);
                PostgresStore second = new PostgresStore(settings)) {
            SandboxRecord x = first.write(tx -> tx.insertSandbox(sandbox("capped-x")));
            SandboxRecord y = first.write(tx -> tx.insertSandbox(sandbox("capped-y")));
            WatchHub hub = new WatchHub();
            var unused = hub.register(
                    change -> events.add("delivered " + change.sandbox().runtimeDetail()));
            try (ChangeFollower follower = new ChangeFollower(
                    first::openChangeLog, hub, () -> false, () -> observer, Duration.ofMillis(300))) {
                // x's update takes its sequence number and stays open, past the cap, while y's commits.
                OpenUpdate held = new OpenUpdate(threads, first, x, "x");
                SandboxRecord y2 = second.write(tx -> tx.updateSandbox(
                        y.toBuilder().runtime(1, "RUNNING", "y").build()));
                await().atMost(Duration.ofSeconds(30))
                        .until(() -> follower.holdingAt().isPresent());
                await().atMost(Duration.ofSeconds(30)).until(() -> events.contains("delivered y"));
                held.commit();
                // A later change: once it is delivered, x's row (a smaller number) would have been delivered before.
                second.write(tx -> tx.updateSandbox(
                        y2.toBuilder().runtime(1, "RUNNING", "z").build()));
                await().atMost(Duration.ofSeconds(30)).until(() -> events.contains("delivered z"));

                assertThat(events).containsExactly("skipped 1 at the cap", "delivered y", "delivered z");
                assertThat(logged.list)
                        .filteredOn(event -> event.getLevel() == Level.WARN)
                        .extracting(ILoggingEvent::getFormattedMessage)
                        .singleElement()
                        .asString()
                        .contains("stayed missing for 300 ms");
                try (ChangeLog log = first.openChangeLog()) {
                    assertThat(log.after(0, 10).entries())
                            .as("x's row is in the log all the same")
                            .extracting(entry -> entry.sandbox().runtimeDetail())
                            .contains("x");
                }
            }
        } finally {
            threads.shutdownNow();
        }
    }

    /** Ends a connection's server process, as a failover or an administrator would. */
    private void terminate(int backend) throws Exception {
        try (Connection connection = StoreSchema.Database.fromEnvironment().connect();
                PreparedStatement statement = connection.prepareStatement("SELECT pg_terminate_backend(?)")) {
            statement.setInt(1, backend);
            try (ResultSet rs = statement.executeQuery()) {
                assertThat(rs.next() && rs.getBoolean(1))
                        .as("backend %d terminated", backend)
                        .isTrue();
            }
        }
    }

    /** An update of a sandbox whose transaction has taken its sequence number and stays open until {@link #commit}. */
    private static final class OpenUpdate {
        private final CountDownLatch taken = new CountDownLatch(1);
        private final CountDownLatch commit = new CountDownLatch(1);
        private final Future<?> written;

        /** Starts the update ({@code sandbox} with the runtime detail {@code detail}); returns once it took its number. */
        OpenUpdate(ExecutorService threads, PostgresStore store, SandboxRecord sandbox, String detail)
                throws InterruptedException {
            written = threads.submit(() -> store.write(tx -> {
                tx.updateSandbox(
                        sandbox.toBuilder().runtime(1, "RUNNING", detail).build());
                taken.countDown();
                awaitQuietly(commit);
                return null;
            }));
            assertThat(taken.await(30, TimeUnit.SECONDS)).isTrue();
        }

        /** Lets the transaction commit, and waits until it has. */
        void commit() throws Exception {
            commit.countDown();
            written.get(30, TimeUnit.SECONDS);
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
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
