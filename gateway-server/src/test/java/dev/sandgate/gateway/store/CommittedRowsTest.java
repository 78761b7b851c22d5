package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("sqlite-only") // Not on PostgreSQL: the embedded store's cached rows (CachingStore).
class CommittedRowsTest extends OpenStoreTest {
    private Optional<SandboxRecord> stored(String id) {
        return store.read(tx -> tx.sandbox(id));
    }

    @Test
    void aRowKeptAfterAnInsertIsWhatAReadReturns() {
        SandboxRecord base = StoreRecords.sandbox("fresh");
        SandboxRecord row = createdAt(base, FINE).toBuilder()
                .claim(1, base.launchRevision(), base.launchDigest(), FINE)
                .updateTime(FINE)
                .condition(new ConditionRecord(ConditionRecord.RUNTIME_DETAIL, "pulling", FINE))
                .pending(Optional.of(
                        new PendingTransition(TransitionKind.CREATE, "op-1", Optional.of("req-1"), 1, FINE)))
                .build();
        store.write(tx -> tx.insertSandbox(row));

        assertThat(store.committedRows()).isEqualTo(1);
        assertThat(store.sandbox(row.id())).isEqualTo(stored(row.id())).isPresent();
    }

    @Test
    void aRowKeptAfterUpdatesIsWhatAReadReturns() {
        SandboxRecord inserted = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("changing")));
        SandboxRecord pending = store.write(tx -> tx.updateSandbox(inserted.toBuilder()
                .phase(SandboxPhase.STOPPING)
                .pending(Optional.of(new PendingTransition(TransitionKind.STOP, "op-2", Optional.empty(), 1, FINE)))
                .condition(new ConditionRecord(ConditionRecord.LAST_OPERATION_FAILED, "earlier", FINE))
                .updateTime(FINE)
                .build()));
        assertThat(store.sandbox(inserted.id())).isEqualTo(stored(inserted.id()));

        store.write(tx -> tx.updateSandbox(pending.toBuilder()
                .phase(SandboxPhase.STOPPED)
                .runtime(1, "STOPPED", "exited")
                .pending(Optional.empty())
                .clearCondition(ConditionRecord.LAST_OPERATION_FAILED)
                .updateTime(FINE.plusMillis(5))
                .build()));

        Optional<SandboxRecord> kept = store.sandbox(inserted.id());
        assertThat(kept).isEqualTo(stored(inserted.id()));
        assertThat(kept.orElseThrow().resourceVersion()).isEqualTo(3);
        assertThat(kept.orElseThrow().phase()).isEqualTo(SandboxPhase.STOPPED);
    }

    /** Inserts a sandbox named {@code name}, then deletes it, each in a commit of its own. */
    private SandboxRecord insertedThenDeleted(String name) {
        SandboxRecord row = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox(name)));
        store.write(tx -> {
            tx.deleteSandbox(row.id(), row.resourceVersion());
            return null;
        });
        return row;
    }

    @Test
    void aDeletedSandboxIsNotFoundAnyMore() {
        SandboxRecord row = insertedThenDeleted("gone");

        assertThat(store.sandbox(row.id())).isEmpty();
        assertThat(store.committedRows()).isZero();
    }

    @Test
    void aSandboxDeletedByACommitIsKnownAbsentWithoutReadingTheDatabase() {
        // The driver reports every deleted resource, and the gateway looks the sandbox up once more for each.
        SandboxRecord row = insertedThenDeleted("deleted");
        long reads = store.lookUpsRead();

        assertThat(store.sandbox(row.id())).isEmpty();
        Optional<SandboxRecord> inWrite = store.write(tx -> tx.sandbox(row.id()));
        assertThat(inWrite).isEmpty();
        assertThat(store.lookUpsRead()).as("look-ups that read the database").isEqualTo(reads);
        assertThat(store.sandbox("00000000-0000-4000-8000-000000000000")).isEmpty();
        assertThat(store.lookUpsRead())
                .as("an id no commit deleted is still read")
                .isEqualTo(reads + 1);
    }

    @Test
    void anIdInsertedAgainAfterItsDeleteIsNoLongerKnownAbsent() {
        // Once its entry is dropped (the entries are bounded), only the deleted ids would answer for it.
        CommittedRows rows = new CommittedRows();
        SandboxRecord row = StoreRecords.sandbox("back");
        rows.apply(List.of(new CommittedRows.Inserted(row)));
        rows.apply(List.of(new CommittedRows.Deleted(row.id())));
        assertThat(rows.deleted(row.id())).isTrue();

        rows.apply(List.of(new CommittedRows.Inserted(row)));

        assertThat(rows.deleted(row.id())).isFalse();
        assertThat(rows.get(row.id())).isEqualTo(row);
    }

    @Test
    void aWriteThatFailsLeavesTheCommittedRow() {
        SandboxRecord row = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("steady")));

        assertThatThrownBy(() -> store.write(tx -> {
                    tx.updateSandbox(row.toBuilder().phase(SandboxPhase.ERROR).build());
                    throw new IllegalStateException("changed my mind");
                }))
                .hasMessage("changed my mind");

        assertThat(store.sandbox(row.id()).orElseThrow().phase()).isEqualTo(SandboxPhase.READY);
        assertThat(store.sandbox(row.id())).isEqualTo(stored(row.id()));
    }

    @Test
    void aWriteRolledBackInsideABatchLeavesTheCommittedRowAndTheOthersApply() throws Exception {
        SandboxRecord first = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("first")));
        SandboxRecord second = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("second")));
        var holding = new CountDownLatch(1);
        var release = new CountDownLatch(1);
        Future<?> holder = StoreRecords.holdWriter(store, threads, tx -> {}, holding, release);
        assertThat(holding.await(30, TimeUnit.SECONDS)).isTrue();

        Future<Object> undone = threads.submit(() -> store.write(tx -> {
            tx.updateSandbox(first.toBuilder().phase(SandboxPhase.ERROR).build());
            throw new IllegalStateException("undone");
        }));
        awaitQueued(1);
        Future<SandboxRecord> kept = threads.submit(() -> store.write(tx ->
                tx.updateSandbox(second.toBuilder().phase(SandboxPhase.STOPPED).build())));
        awaitQueued(2);
        release.countDown();
        holder.get(30, TimeUnit.SECONDS);

        assertThatThrownBy(() -> undone.get(30, TimeUnit.SECONDS)).hasRootCauseMessage("undone");
        kept.get(30, TimeUnit.SECONDS);
        assertThat(store.sandbox(first.id()).orElseThrow().phase()).isEqualTo(SandboxPhase.READY);
        assertThat(store.sandbox(second.id()).orElseThrow().phase()).isEqualTo(SandboxPhase.STOPPED);
        assertThat(store.sandbox(first.id())).isEqualTo(stored(first.id()));
        assertThat(store.sandbox(second.id())).isEqualTo(stored(second.id()));
    }

    @Test
    void aWriteTransactionReadsASandboxItHasNotWrittenAsLastCommitted() {
        SandboxRecord row = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("untouched")));

        Optional<SandboxRecord> seen = store.write(tx -> tx.sandbox(row.id()));

        assertThat(seen).isEqualTo(stored(row.id())).isPresent();
    }

    @Test
    void aWriteTransactionSeesItsOwnChangesToASandbox() {
        SandboxRecord row = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("own-changes")));
        assertThat(store.sandbox(row.id())).isPresent(); // kept in memory

        List<Optional<SandboxRecord>> seen = store.write(tx -> {
            Optional<SandboxRecord> before = tx.sandbox(row.id());
            SandboxRecord updated = tx.updateSandbox(
                    row.toBuilder().phase(SandboxPhase.STOPPING).build());
            Optional<SandboxRecord> afterUpdate = tx.sandbox(row.id());
            tx.deleteSandbox(row.id(), updated.resourceVersion());
            return List.of(before, afterUpdate, tx.sandbox(row.id()));
        });

        assertThat(seen.get(0).orElseThrow().phase()).isEqualTo(SandboxPhase.READY);
        assertThat(seen.get(1).orElseThrow().phase()).isEqualTo(SandboxPhase.STOPPING);
        assertThat(seen.get(1).orElseThrow().resourceVersion()).isEqualTo(2);
        assertThat(seen.get(2)).isEmpty();
    }

    @Test
    void aWriteInABatchSeesWhatTheWritesBeforeItInTheSameBatchChanged() throws Exception {
        SandboxRecord row = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("batched")));
        assertThat(store.sandbox(row.id())).isPresent(); // kept in memory
        var holding = new CountDownLatch(1);
        var release = new CountDownLatch(1);
        Future<?> holder = StoreRecords.holdWriter(store, threads, tx -> {}, holding, release);
        assertThat(holding.await(30, TimeUnit.SECONDS)).isTrue();

        Future<SandboxRecord> stop = threads.submit(() -> store.write(tx ->
                tx.updateSandbox(row.toBuilder().phase(SandboxPhase.STOPPED).build())));
        awaitQueued(1);
        Future<Optional<SandboxRecord>> look = threads.submit(() -> store.write(tx -> tx.sandbox(row.id())));
        awaitQueued(2);
        release.countDown();
        holder.get(30, TimeUnit.SECONDS);

        stop.get(30, TimeUnit.SECONDS);
        assertThat(look.get(30, TimeUnit.SECONDS).orElseThrow().phase()).isEqualTo(SandboxPhase.STOPPED);
        assertThat(store.sandbox(row.id())).isEqualTo(stored(row.id()));
    }

    @Test
    void aRowReadFromTheDatabaseIsKeptForTheNextLookUp() {
        SandboxRecord row = store.write(tx -> tx.insertSandbox(StoreRecords.sandbox("reopened")));
        store.close();
        store = new SqliteStore(dir.resolve("store.db"), SqliteStore.Synchronous.NORMAL);
        assertThat(store.committedRows()).isZero();

        assertThat(store.sandbox(row.id())).isEqualTo(stored(row.id())).isPresent();
        assertThat(store.committedRows()).isEqualTo(1);
        assertThat(store.sandbox("00000000-0000-4000-8000-000000000000")).isEmpty();
        assertThat(store.committedRows()).isEqualTo(1);
    }

    @Test
    void aRowReadBeforeAChangeWasAppliedIsNotKept() {
        CommittedRows rows = new CommittedRows();
        SandboxRecord old = StoreRecords.sandbox("raced");
        long before = rows.sequence();
        rows.apply(List.of(new CommittedRows.Deleted(old.id())));

        rows.fill(before, old);

        assertThat(rows.get(old.id()))
                .as("a row read before a delete was applied")
                .isNull();
    }

    @Test
    void anUpdateOverAVersionItDoesNotHoldDropsTheRow() {
        CommittedRows rows = new CommittedRows();
        SandboxRecord v1 =
                StoreRecords.sandbox("skipped").toBuilder().resourceVersion(1).build();
        rows.fill(rows.sequence(), v1);

        rows.apply(List.of(
                new CommittedRows.Updated(v1.toBuilder().resourceVersion(2).build(), 2, List.of())));

        assertThat(rows.get(v1.id())).isNull();
    }

    private static SandboxRecord createdAt(SandboxRecord r, Instant at) {
        return new SandboxRecord(
                r.id(),
                r.workspace(),
                r.name(),
                r.phase(),
                r.generation(),
                r.generationStart(),
                r.launchRevision(),
                r.launchDigest(),
                r.runtimeGeneration(),
                r.runtimeState(),
                r.runtimeDetail(),
                r.policyMode(),
                r.admittedRevision(),
                r.admittedDigest(),
                r.spec(),
                r.labels(),
                r.conditions(),
                r.pending(),
                r.resourceVersion(),
                at,
                r.updateTime(),
                r.expiry(),
                r.lease());
    }

    private void awaitQueued(int count) throws InterruptedException {
        StoreRecords.awaitQueued(store, count);
    }
}
