package dev.sandgate.gateway.store;

import static dev.sandgate.gateway.store.StoreStatements.RELEASE_SAVEPOINT;
import static dev.sandgate.gateway.store.StoreStatements.ROLLBACK_TO_SAVEPOINT;
import static dev.sandgate.gateway.store.StoreStatements.SAVEPOINT;
import static java.util.Objects.requireNonNull;

import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.function.LongConsumer;

/**
 * The single writer of a store, with group commit: callers queue their work; whoever holds the writer runs every
 * queued work (up to {@link #MAX_BATCH}) in one transaction, each inside its own savepoint, commits once, and hands
 * every caller its result, waking each one (callers that find the writer busy wait parked, not in line for the lock,
 * so that the writer never waits for a woken caller to pass it on). A work that throws is rolled back to its savepoint
 * alone and its caller gets the exception; the others commit. Each caller still returns only after the commit that
 * holds its writes, so durability is unchanged; under concurrency many operations share one commit (and one sync)
 * instead of queueing for one each. A work that calls {@code write} again joins the transaction it runs in.
 *
 * <p>A work's savepoint is released only when the next work's is set, or by the commit: on PostgreSQL, where each
 * statement is a round trip to the server on the one writer connection, the release and the next savepoint go in one
 * round trip ({@link #RELEASE_AND_SAVEPOINT}), and the last work's release costs none.
 */
final class GroupCommit {
    /** How many queued write transactions share one commit at most. */
    private static final int MAX_BATCH = 64;
    /** How often a write transaction is run again after a retryable failure before the failure is reported. */
    private static final int RETRY_ATTEMPTS = 8;
    /** The last work's savepoint released and the next one's set, in one round trip (PostgreSQL). */
    private static final String RELEASE_AND_SAVEPOINT = RELEASE_SAVEPOINT + "; " + SAVEPOINT;

    private final PreparedConnection writer;
    private final SqlDialect dialect;
    private final ReentrantLock writeLock = new ReentrantLock();
    private final ConcurrentLinkedQueue<Queued<?>> queue = new ConcurrentLinkedQueue<>();
    private final AtomicLong commits = new AtomicLong();
    private volatile LongConsumer afterCommit = commits -> {};
    private volatile WriteObserver observer = WriteObserver.NONE;
    /** The transaction of the work the writer runs now, for a nested write; only the lock holder uses it. */
    private StoreTransaction running;
    /** Whether the last work's savepoint is still set in the open transaction; only the lock holder uses it. */
    private boolean savepointSet;

    GroupCommit(PreparedConnection writer, SqlDialect dialect) {
        this.writer = requireNonNull(writer, "writer is null");
        this.dialect = requireNonNull(dialect, "dialect is null");
    }

    /** Set once, before the first write. */
    void observeWith(WriteObserver observer) {
        this.observer = requireNonNull(observer, "observer is null");
    }

    /** Called with the number of commits so far after each commit, holding the writer. Set before the first write. */
    void afterCommit(LongConsumer afterCommit) {
        this.afterCommit = requireNonNull(afterCommit, "afterCommit is null");
    }

    <T> T write(Function<StoreTransaction, T> work) {
        requireNonNull(work, "work is null");
        if (writeLock.isHeldByCurrentThread()) {
            if (running == null) {
                throw new IllegalStateException("a write while the writes are held");
            }
            return work.apply(running);
        }
        Queued<T> mine = new Queued<>(work, Thread.currentThread());
        queue.add(mine);
        boolean interrupted = false;
        while (!mine.done) {
            if (writeLock.tryLock()) {
                try {
                    while (!mine.done) {
                        runBatch();
                    }
                } finally {
                    unlockAndWakeNext();
                }
            } else {
                // The leader completes this work and wakes its caller, or wakes it to lead once it is done.
                LockSupport.park(this);
                interrupted |= Thread.interrupted();
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return mine.outcome();
    }

    /** Runs {@code action} between write transactions: writes queue meanwhile, and the next one leads after it. */
    <T> T holding(WalCheckpointer.SqlAction<T> action) throws SQLException {
        writeLock.lock();
        try {
            return action.run();
        } finally {
            unlockAndWakeNext();
        }
    }

    private void unlockAndWakeNext() {
        writeLock.unlock();
        // A write queued after the last batch waits parked: wake the first so that it leads.
        Queued<?> next = queue.peek();
        if (next != null) {
            LockSupport.unpark(next.caller);
        }
    }

    /** Holding the write lock: runs up to MAX_BATCH queued works in one transaction and completes them. */
    private void runBatch() {
        List<Queued<?>> batch = new ArrayList<>();
        for (Queued<?> next; batch.size() < MAX_BATCH && (next = queue.poll()) != null; ) {
            batch.add(next);
        }
        if (batch.isEmpty()) {
            return;
        }
        boolean alone = batch.size() == 1;
        for (int attempt = 1; ; attempt++) {
            Throwable batchFailure;
            savepointSet = false;
            observer.beginTransaction();
            try {
                for (Queued<?> queued : batch) {
                    queued.runIn(this, alone);
                }
                if (alone && batch.getFirst().failure != null) {
                    writer.rollback();
                } else {
                    writer.connection.commit();
                    afterCommit.accept(commits.incrementAndGet());
                    observer.committed(observed(batch));
                }
                batch.forEach(Queued::complete);
                return;
            } catch (RuntimeException | Error e) {
                batchFailure = e;
            } catch (SQLException e) {
                batchFailure = new StoreException("commit failed", e);
            }
            writer.rollback();
            observer.rolledBack(observed(batch));
            batch.forEach(Queued::reset);
            if (!dialect.isRetryable(batchFailure) || attempt >= RETRY_ATTEMPTS) {
                for (Queued<?> queued : batch) {
                    queued.fail(batchFailure);
                }
                if (batchFailure instanceof Error error) {
                    throw error;
                }
                return;
            }
            // SQLite answers SQLITE_BUSY without consulting busy_timeout when a deferred transaction cannot be
            // upgraded from its read snapshot to a write (another process wrote meanwhile); the whole batch (database
            // work only, rolled back above) is then safe to run again.
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(attempt));
        }
    }

    private static List<WriteObserver.Observed> observed(List<Queued<?>> batch) {
        List<WriteObserver.Observed> all = new ArrayList<>(batch.size());
        for (Queued<?> queued : batch) {
            if (queued.observed != null) {
                all.add(queued.observed);
            }
        }
        return all;
    }

    /** Sets a work's savepoint, releasing the last work's if it is still set. */
    private void setSavepoint() {
        if (!savepointSet) {
            control(SAVEPOINT);
        } else if (dialect == SqlDialect.POSTGRESQL) {
            control(RELEASE_AND_SAVEPOINT); // one round trip: the driver sends both before it waits
        } else {
            control(RELEASE_SAVEPOINT);
            control(SAVEPOINT);
        }
        savepointSet = true;
    }

    /** Runs one statement of transaction control (SAVEPOINT, RELEASE, ROLLBACK TO) on the writer. */
    private void control(String sql) {
        try {
            writer.prepare(sql).execute();
        } catch (SQLException e) {
            throw new StoreException(sql + " failed", e);
        }
    }

    /** How many write transactions were committed. */
    long commits() {
        return commits.get();
    }

    /** How many writes wait for the writer. */
    int queuedWrites() {
        return queue.size();
    }

    /** Waits for the running batch, then runs {@code close} holding the writer. */
    void closeHolding(Runnable close) {
        writeLock.lock();
        try {
            close.run();
        } finally {
            writeLock.unlock();
        }
    }

    /**
     * One caller's work in the queue. Its fields are written by the thread running the batch, holding the write lock,
     * before it sets {@code done}; the caller reads them after it has seen {@code done}.
     */
    private static final class Queued<T> {
        private final Function<StoreTransaction, T> work;
        private final Thread caller;
        private T result;
        private RuntimeException failure;
        private Throwable batchFailure;
        private volatile boolean done;
        /** The work's view of the transaction, if the work did not fail. */
        private WriteObserver.Observed observed;

        Queued(Function<StoreTransaction, T> work, Thread caller) {
            this.work = work;
            this.caller = caller;
        }

        /** Runs the work in the open transaction; a failure of its own is rolled back to its savepoint. */
        void runIn(GroupCommit writes, boolean alone) {
            if (!alone) {
                writes.setSavepoint();
            }
            List<CommittedRows.Change> changes = new ArrayList<>();
            WriteObserver.Observed mine =
                    writes.observer.observe(new SqlTransaction(writes.writer, writes.dialect, changes), changes);
            writes.running = mine.transaction();
            try {
                result = work.apply(writes.running);
                observed = mine;
            } catch (RuntimeException e) {
                if (writes.dialect.isRetryable(e)) {
                    throw e; // the whole batch runs again
                }
                failure = e;
                if (!alone) {
                    writes.control(ROLLBACK_TO_SAVEPOINT);
                }
            } finally {
                writes.running = null;
            }
            // Its savepoint stays set until the next work's is set or the batch commits.
        }

        void reset() {
            result = null;
            failure = null;
            observed = null;
        }

        void complete() {
            done = true;
            wake();
        }

        void fail(Throwable cause) {
            batchFailure = cause;
            done = true;
            wake();
        }

        private void wake() {
            if (caller != Thread.currentThread()) {
                LockSupport.unpark(caller);
            }
        }

        T outcome() {
            if (batchFailure instanceof RuntimeException e) {
                throw e;
            }
            if (batchFailure instanceof Error e) {
                throw new StoreException("the write transaction failed: " + e, e);
            }
            if (failure != null) {
                throw failure;
            }
            return result;
        }
    }
}
