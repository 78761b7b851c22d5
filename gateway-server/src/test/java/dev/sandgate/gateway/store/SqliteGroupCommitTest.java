package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("sqlite-only") // Not on PostgreSQL: SQLite itself, group commit on the embedded store.
class SqliteGroupCommitTest extends OpenStoreTest {
    private Optional<SandboxRecord> byName(String name) {
        return store.read(tx -> tx.sandboxByName("team", name));
    }

    /** Starts a write that holds the writer until {@code release} opens, so that later writes queue. */
    private Future<?> holdWriter(CountDownLatch holding, CountDownLatch release) {
        return StoreRecords.holdWriter(
                store, threads, tx -> tx.insertSandbox(StoreRecords.sandbox("holder")), holding, release);
    }

    private void awaitQueued(int count) throws InterruptedException {
        StoreRecords.awaitQueued(store, count);
    }

    @Test
    void writesQueuedBehindABusyWriterShareOneCommitAndEachGetsItsOwnResult() throws Exception {
        var holding = new CountDownLatch(1);
        var release = new CountDownLatch(1);
        Future<?> holder = holdWriter(holding, release);
        assertThat(holding.await(30, TimeUnit.SECONDS)).isTrue();
        long before = store.commits();

        List<Future<String>> writes = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            String name = "queued-" + i;
            writes.add(threads.submit(() -> store.write(
                    tx -> tx.insertSandbox(StoreRecords.sandbox(name)).name())));
        }
        awaitQueued(5);
        release.countDown();
        holder.get(30, TimeUnit.SECONDS);

        for (int i = 0; i < 5; i++) {
            assertThat(writes.get(i).get(30, TimeUnit.SECONDS)).isEqualTo("queued-" + i);
        }
        assertThat(store.commits() - before)
                .as("the holder's commit, then one for the five queued")
                .isEqualTo(2);
        for (int i = 0; i < 5; i++) {
            String name = "queued-" + i;
            assertThat(byName(name)).isPresent();
        }
    }

    @Test
    void moreQueuedWritesThanOneBatchHoldsAreCommittedInSeveralBatchesAndNoCallerIsLeftWaiting() throws Exception {
        var holding = new CountDownLatch(1);
        var release = new CountDownLatch(1);
        Future<?> holder = holdWriter(holding, release);
        assertThat(holding.await(30, TimeUnit.SECONDS)).isTrue();
        long before = store.commits();

        int count = 150; // more than two batches of 64
        List<Future<String>> writes = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String name = "many-" + i;
            writes.add(threads.submit(() -> store.write(
                    tx -> tx.insertSandbox(StoreRecords.sandbox(name)).name())));
        }
        awaitQueued(count);
        release.countDown();
        holder.get(30, TimeUnit.SECONDS);

        for (int i = 0; i < count; i++) {
            assertThat(writes.get(i).get(30, TimeUnit.SECONDS)).isEqualTo("many-" + i);
        }
        assertThat(store.commits() - before)
                .as("the holder's commit, then at least three batches for 150 queued writes")
                .isGreaterThanOrEqualTo(4);
        List<SandboxRecord> stored = store.read(tx -> tx.listSandboxes(SandboxFilter.ALL, Optional.empty(), 1000));
        assertThat(stored).hasSize(count + 1);
    }

    @Test
    void aFailingWriteInABatchIsRolledBackAloneAndItsCallerGetsTheException() throws Exception {
        store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("taken")));
        var holding = new CountDownLatch(1);
        var release = new CountDownLatch(1);
        Future<?> holder = holdWriter(holding, release);
        assertThat(holding.await(30, TimeUnit.SECONDS)).isTrue();

        Future<Object> good1 =
                threads.submit(() -> store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("good-1"))));
        awaitQueued(1);
        Future<Object> bad = threads.submit(() -> store.write(tx -> {
            tx.insertSandbox(StoreRecords.sandbox("written-then-undone"));
            return tx.insertSandbox(StoreRecords.sandbox("taken"));
        }));
        awaitQueued(2);
        Future<Object> good2 =
                threads.submit(() -> store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("good-2"))));
        awaitQueued(3);
        release.countDown();
        holder.get(30, TimeUnit.SECONDS);

        assertThat(good1.get(30, TimeUnit.SECONDS)).isNotNull();
        assertThat(good2.get(30, TimeUnit.SECONDS)).isNotNull();
        assertThatThrownBy(() -> bad.get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(NameTakenException.class);
        assertThat(byName("good-1")).isPresent();
        assertThat(byName("good-2")).isPresent();
        assertThat(byName("written-then-undone"))
                .as("the failed write's first insert is rolled back with it")
                .isEmpty();
    }

    @Test
    void aWriteAloneThatFailsWritesNothing() {
        assertThatThrownBy(() -> store.write(tx -> {
                    tx.insertSandbox(StoreRecords.sandbox("half"));
                    throw new IllegalStateException("changed my mind");
                }))
                .hasMessage("changed my mind");

        assertThat(byName("half")).isEmpty();
    }

    @Test
    void aWriteInsideAWriteJoinsItsTransaction() {
        String name = store.write(tx -> {
            tx.insertSandbox(StoreRecords.sandbox("outer"));
            return store.write(
                    inner -> inner.sandboxByName("team", "outer").orElseThrow().name());
        });

        assertThat(name).isEqualTo("outer");
    }
}
