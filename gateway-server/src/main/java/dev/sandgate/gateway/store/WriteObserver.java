package dev.sandgate.gateway.store;

import java.util.List;

/**
 * What a layer above the SQL store ({@link CachingStore}) learns of the write transactions that {@link GroupCommit}
 * runs. Every method is called by the thread that holds the writer, so in commit order and one at a time.
 */
interface WriteObserver {
    /** Observes nothing: each write runs in the SQL transaction itself. */
    WriteObserver NONE = new WriteObserver() {
        @Override
        public void beginTransaction() {}

        @Override
        public Observed observe(SqlTransaction tx, List<CommittedRows.Change> changes) {
            return () -> tx;
        }

        @Override
        public void committed(List<Observed> writes) {}

        @Override
        public void rolledBack(List<Observed> writes) {}
    };

    /** One queued write's view of the transaction it runs in. */
    @FunctionalInterface
    interface Observed {
        StoreTransaction transaction();
    }

    /** A transaction begins: one or more queued writes follow, each in a savepoint of its own. */
    void beginTransaction();

    /** The transaction one queued write runs in; {@code changes} is where {@code tx} records its changes. */
    Observed observe(SqlTransaction tx, List<CommittedRows.Change> changes);

    /** After the commit: the writes that did not fail, in the order they ran. */
    void committed(List<Observed> writes);

    /** The transaction was rolled back (and may be run again): the writes that had not failed in it. */
    void rolledBack(List<Observed> writes);
}
