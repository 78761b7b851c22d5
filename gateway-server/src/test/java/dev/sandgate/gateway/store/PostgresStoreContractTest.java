package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.gateway.testing.TestPostgres;
import dev.sandgate.testing.EngineTest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The store contract on a real PostgreSQL (started by scripts/engines/postgres.sh, which exports
 * SANDGATE_POSTGRES_URL, SANDGATE_POSTGRES_USER and SANDGATE_POSTGRES_PASSWORD_FILE). Without it the class is skipped,
 * unless engines are required (CI), where it fails. Each test starts from empty tables.
 */
@EngineTest
class PostgresStoreContractTest extends StoreContractTest {
    /** The database named by the environment, or the test is skipped (or fails under CI). */
    static PostgresStore.Settings settings() throws Exception {
        return TestPostgres.settings();
    }

    @Override
    Store openEmpty() throws Exception {
        PostgresStore.Settings settings = settings();
        PostgresStore opened = new PostgresStore(settings);
        try (Connection connection = DriverManager.getConnection(
                        settings.url(), settings.user(), settings.password().orElse(null));
                Statement statement = connection.createStatement()) {
            statement.execute("TRUNCATE sandbox, sandbox_label, policy_revision, request, gateway_meta, replica_lease");
        } catch (Exception e) {
            opened.close();
            throw e;
        }
        return opened;
    }

    @Test
    @DisplayName("two stores on one database: the second takes the leader's lease once the first stops renewing it,"
            + " and the first's epoch is refused after")
    void leaderHandOver() throws Exception {
        try (PostgresStore other = new PostgresStore(settings())) {
            ReplicaLease first = store.write(
                            tx -> tx.takeLease(ReplicaLease.LEADER, "replica-a", Duration.ofMillis(300)))
                    .orElseThrow();
            Optional<ReplicaLease> early =
                    other.write(tx -> tx.takeLease(ReplicaLease.LEADER, "replica-b", Duration.ofMinutes(1)));
            assertThat(early).isEmpty();

            ReplicaLease second = Awaitility.await()
                    .until(
                            () -> other.write(
                                    tx -> tx.takeLease(ReplicaLease.LEADER, "replica-b", Duration.ofMinutes(1))),
                            Optional::isPresent)
                    .orElseThrow();

            assertThat(second.epoch()).isEqualTo(first.epoch() + 1);
            assertThat(holds(store, first)).isFalse();
            assertThat(renew(store, first, Duration.ofMinutes(1))).isFalse();
            assertThat(holds(other, second)).isTrue();
        }
    }

    @Test
    @DisplayName("a result committed with a sandbox lease taken over by another replica is refused, and the new"
            + " holder's commit waits for none")
    void staleEpochCommitRefused() throws Exception {
        try (PostgresStore other = new PostgresStore(settings())) {
            SandboxRecord sandbox = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("a")));
            String key = ReplicaLease.sandbox(sandbox.id());
            ReplicaLease a = store.write(tx -> tx.takeLease(key, "replica-a", Duration.ofMillis(200)))
                    .orElseThrow();
            ReplicaLease b = Awaitility.await()
                    .until(
                            () -> other.write(tx -> tx.takeLease(key, "replica-b", Duration.ofMinutes(1))),
                            Optional::isPresent)
                    .orElseThrow();

            // Replica A commits its result only if it still holds the lease, in the result's transaction.
            boolean committedByA = store.write(tx -> {
                if (!tx.holdsLease(a)) {
                    return false;
                }
                tx.updateSandbox(
                        sandbox.toBuilder().runtime(1, "RUNNING", "from a").build());
                return true;
            });
            boolean committedByB = other.write(tx -> {
                if (!tx.holdsLease(b)) {
                    return false;
                }
                tx.updateSandbox(
                        sandbox.toBuilder().runtime(1, "RUNNING", "from b").build());
                return true;
            });

            assertThat(b.epoch()).isEqualTo(a.epoch() + 1);
            assertThat(committedByA).isFalse();
            assertThat(committedByB).isTrue();
            assertThat(store.sandbox(sandbox.id()).orElseThrow().runtimeDetail())
                    .isEqualTo("from b");
        }
    }

    @Test
    @DisplayName("a take-over waits for the holder's commit that checked its lease, then finds the lease held")
    void holdsLeaseLocksTheLease() throws Exception {
        // Two threads of their own: the common pool may have one, which the first would block.
        try (PostgresStore other = new PostgresStore(settings());
                java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newFixedThreadPool(2)) {
            // Expired by the time anyone else asks: only the row lock of holdsLease keeps it.
            ReplicaLease a = store.write(tx -> tx.takeLease("sandbox/x", "replica-a", Duration.ofMillis(1)))
                    .orElseThrow();
            java.util.concurrent.CountDownLatch checked = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CompletableFuture<Boolean> commit = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> store.write(tx -> {
                        boolean holds = tx.holdsLease(a);
                        checked.countDown();
                        try {
                            release.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        // Renewed in the same transaction: the take-over, blocked on the row, must see it.
                        return holds && tx.renewLease(a, Duration.ofMinutes(1));
                    }),
                    threads);
            checked.await();
            java.util.concurrent.CompletableFuture<Optional<ReplicaLease>> takeOver =
                    java.util.concurrent.CompletableFuture.supplyAsync(
                            () -> other.write(tx -> tx.takeLease("sandbox/x", "replica-b", Duration.ofMinutes(1))),
                            threads);
            try {
                Awaitility.await().until(PostgresStoreContractTest::aSessionWaitsForALock);
            } finally {
                release.countDown();
            }

            assertThat(commit.get()).isTrue();
            assertThat(takeOver.get()).isEmpty();
        }
    }

    @Test
    @DisplayName("a wrong password is refused, and the message does not hold it")
    void wrongPassword() throws Exception {
        PostgresStore.Settings settings = settings();
        PostgresStore.Settings wrong =
                new PostgresStore.Settings(settings.url(), settings.user(), Optional.of("not-the-password-42"));

        assertThatThrownBy(() -> new PostgresStore(wrong).close())
                .isInstanceOf(StoreException.class)
                .hasMessageContaining(settings.user())
                .satisfies(e -> assertThat(messages(e)).doesNotContain("not-the-password-42"));
        assertThat(wrong.toString()).doesNotContain("not-the-password-42");
    }

    @Test
    @DisplayName("writes queued into one batch: one that fails after writing is rolled back alone, and the writes"
            + " before and after it commit")
    void aFailingWriteInABatchIsRolledBackAlone() throws Exception {
        PostgresStore postgres = (PostgresStore) store;
        try (java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newFixedThreadPool(5)) {
            java.util.concurrent.CountDownLatch holding = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.Future<?> holder = StoreRecords.holdWriter(
                    store, threads, tx -> tx.insertSandbox(StoreRecords.sandbox("holder")), holding, release);
            assertThat(holding.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            java.util.List<java.util.concurrent.Future<Object>> writes = new java.util.ArrayList<>();
            for (String name : java.util.List.of("good-1", "bad", "good-2", "good-3")) {
                writes.add(threads.submit(() -> store.write(tx -> {
                    tx.insertSandbox(StoreRecords.sandbox(name));
                    if (name.equals("bad")) {
                        throw new IllegalStateException("changed my mind");
                    }
                    return name;
                })));
                Awaitility.await().until(postgres::queuedWrites, queued -> queued == writes.size());
            }
            release.countDown();
            holder.get(30, java.util.concurrent.TimeUnit.SECONDS);

            assertThatThrownBy(() -> writes.get(1).get(30, java.util.concurrent.TimeUnit.SECONDS))
                    .hasRootCauseMessage("changed my mind");
            for (int i : new int[] {0, 2, 3}) {
                assertThat(writes.get(i).get(30, java.util.concurrent.TimeUnit.SECONDS))
                        .isNotNull();
            }
            for (String name : java.util.List.of("holder", "good-1", "good-2", "good-3")) {
                assertThat(sandboxByNameRead("team", name)).as(name).isPresent();
            }
            assertThat(sandboxByNameRead("team", "bad"))
                    .as("the failed write's insert is rolled back with it")
                    .isEmpty();
        }
    }

    private static boolean aSessionWaitsForALock() throws Exception {
        PostgresStore.Settings settings = settings();
        try (Connection connection = DriverManager.getConnection(
                        settings.url(), settings.user(), settings.password().orElse(null));
                Statement statement = connection.createStatement();
                java.sql.ResultSet rs = statement.executeQuery("SELECT count(*) FROM pg_stat_activity"
                        + " WHERE datname = current_database() AND wait_event_type = 'Lock'")) {
            rs.next();
            return rs.getLong(1) > 0;
        }
    }

    private static String messages(Throwable e) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            all.append(t).append('\n');
        }
        return all.toString();
    }

    @Test
    @DisplayName("a write transaction's read of a sandbox locks its row: another replica's write of it waits for the"
            + " commit, so the first's compare-and-set does not fail and neither write is lost")
    void writeTransactionReadLocksTheRow() throws Exception {
        // Two threads of their own: the common pool may have only one, which the first write holds.
        try (PostgresStore other = new PostgresStore(settings());
                ExecutorService writers = Executors.newFixedThreadPool(2)) {
            SandboxRecord sandbox = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("locked")));
            CountDownLatch read = new CountDownLatch(1);
            CountDownLatch proceed = new CountDownLatch(1);
            CompletableFuture<SandboxRecord> first = CompletableFuture.supplyAsync(
                    () -> store.write(tx -> {
                        SandboxRecord current = tx.sandbox(sandbox.id()).orElseThrow();
                        read.countDown();
                        awaitLatch(proceed);
                        return tx.updateSandbox(current.toBuilder()
                                .updateTime(current.updateTime().plusSeconds(1))
                                .build());
                    }),
                    writers);
            assertThat(read.await(30, TimeUnit.SECONDS)).isTrue();
            CompletableFuture<SandboxRecord> second = CompletableFuture.supplyAsync(
                    () -> other.write(tx -> {
                        SandboxRecord current = tx.sandbox(sandbox.id()).orElseThrow();
                        return tx.updateSandbox(current.toBuilder()
                                .updateTime(current.updateTime().plusSeconds(2))
                                .build());
                    }),
                    writers);
            // Either the second write waits on the row's lock (as it must), or it went through (the bug).
            Awaitility.await().until(() -> second.isDone() || aSessionWaitsForALock());
            proceed.countDown();

            assertThat(first.get(30, TimeUnit.SECONDS).resourceVersion()).isEqualTo(sandbox.resourceVersion() + 1);
            assertThat(second.get(30, TimeUnit.SECONDS).resourceVersion()).isEqualTo(sandbox.resourceVersion() + 2);
        }
    }

    private static void awaitLatch(CountDownLatch latch) {
        try {
            assertThat(latch.await(30, TimeUnit.SECONDS)).isTrue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
