package dev.sandgate.gateway.store;

import static dev.sandgate.gateway.store.SqliteStatements.*;
import static java.util.Objects.requireNonNull;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.flywaydb.core.Flyway;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded store: one SQLite file in WAL mode, migrated by Flyway.
 *
 * <p>Writes go through one connection, serialized by a lock, so a {@link #write} transaction reads and writes
 * without interference. Reads use a small pool of other connections; in WAL mode they see the last committed state
 * and never block the writer.
 *
 * <p>Durability: with {@link Synchronous#NORMAL} (the default) a commit survives a crash of the gateway process; an
 * operating-system crash or power loss may lose the last commits (never corrupting the file). {@link
 * Synchronous#FULL} also survives those, at roughly a fifth of the commit rate here. See docs/api.md.
 */
public final class SqliteStore implements Store {
    /** SQLite's {@code synchronous} setting in WAL mode. */
    public enum Synchronous {
        NORMAL,
        FULL
    }

    private static final Logger log = LoggerFactory.getLogger(SqliteStore.class);
    private static final int READERS = 4;
    /**
     * The writer's page cache in KiB (SQLite's default is 2 MiB), native memory outside the Java heap: with 10,000
     * sandboxes and the day's request records the pages of a commit were often no longer cached and read again.
     */
    private static final int WRITER_CACHE_KIB = 16 * 1024;
    /** SQLite's primary result code for a constraint violation. */
    private static final int SQLITE_CONSTRAINT = 19;
    /** SQLite's primary result code for a locked database. */
    private static final int SQLITE_BUSY = 5;
    /** How often a write transaction is run again after SQLITE_BUSY before the failure is reported. */
    private static final int BUSY_ATTEMPTS = 8;

    private final String url;
    /** How many queued write transactions share one commit at most. */
    private static final int MAX_BATCH = 64;

    private final ReentrantLock writeLock = new ReentrantLock();
    private final ConcurrentLinkedQueue<Queued<?>> queue = new ConcurrentLinkedQueue<>();
    private volatile long commits;
    private final Db writer;
    private final BlockingQueue<Db> readers = new ArrayBlockingQueue<>(READERS);
    private final List<Db> all = new ArrayList<>();
    private WalCheckpointer checkpointer;
    private final DecodedColumns decoded = new DecodedColumns();
    private final CommittedRows committed = new CommittedRows();
    private final LongAdder lookUpsRead = new LongAdder();
    /**
     * The sandboxes the open write transaction has written (or tried to), kept by the writer: any other sandbox reads
     * in that transaction as last committed, so {@link #committed} answers for it.
     */
    private final Set<String> touched = new HashSet<>();
    /** Admitted policy revisions, which never change: those committed or read lately, up to MAX_REVISIONS. */
    private final ConcurrentHashMap<RevisionKey, PolicyRevisionRecord> revisions = new ConcurrentHashMap<>();

    static final int MAX_REVISIONS = 20_000;

    private record RevisionKey(String sandboxId, long revision) {}

    private final RequestIds requestIds;
    /** The changes of the work the writer runs now; written and read holding the write lock. */
    private List<CommittedRows.Change> running;
    /** The policy revisions the running work inserted, for a nested write; only the lock holder uses it. */
    private List<PolicyRevisionRecord> runningRevisions;

    public SqliteStore(Path file, Synchronous synchronous) {
        this(file, synchronous, Tuning.DEFAULT);
    }

    /**
     * Sizes and seams that tests change.
     *
     * @param requestIdsExpected the fewest ids the request-id filter is sized for (small, to rebuild it)
     * @param scanHook called by each rebuild of that filter once its snapshot has begun (to hold it there)
     * @param logRestartPages how long a write-ahead log is made to start over
     * @param checkpointEveryCommits how many commits wake the background checkpoint
     */
    record Tuning(
            long requestIdsExpected, RequestIds.ScanHook scanHook, long logRestartPages, long checkpointEveryCommits) {
        static final Tuning DEFAULT = new Tuning(
                RequestIds.MIN_EXPECTED, () -> {}, WalCheckpointer.RESTART_PAGES, WalCheckpointer.EVERY_COMMITS);

        Tuning withRequestIds(long expected, RequestIds.ScanHook hook) {
            return new Tuning(expected, hook, logRestartPages, checkpointEveryCommits);
        }

        Tuning withLogRestart(long pages, long everyCommits) {
            return new Tuning(requestIdsExpected, scanHook, pages, everyCommits);
        }
    }

    SqliteStore(Path file, Synchronous synchronous, Tuning tuning) {
        requireNonNull(file, "file is null");
        requireNonNull(synchronous, "synchronous is null");
        this.url = "jdbc:sqlite:" + file.toAbsolutePath();
        this.requestIds = new RequestIds(tuning.requestIdsExpected(), () -> connect(synchronous), tuning.scanHook());
        migrate();
        try {
            writer = open(synchronous);
            all.add(writer);
            // Checkpoints run on a thread of their own (WalCheckpointer); the writer checkpoints only the rest of a log
            // that grew to LOG_LIMIT_PAGES, which makes the log start over.
            try (Statement statement = writer.connection.createStatement()) {
                statement.execute("PRAGMA wal_autocheckpoint=" + WalCheckpointer.LOG_LIMIT_PAGES);
                // The pages the writer changes stay in its cache between commits, instead of being read again.
                statement.execute("PRAGMA cache_size=-" + WRITER_CACHE_KIB);
            }
            writer.connection.commit();
            try {
                requestIds.build(writer.connection);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SQLException("interrupted while reading the request ids", e);
            }
            writer.connection.rollback();
            for (int i = 0; i < READERS; i++) {
                Db reader = open(synchronous);
                all.add(reader);
                readers.add(reader);
            }
            Db checkpoints = open(synchronous);
            checkpoints.connection.setAutoCommit(true);
            checkpointer = new WalCheckpointer(
                    checkpoints.connection,
                    file,
                    () -> commits,
                    this::holdingWrites,
                    tuning.logRestartPages(),
                    tuning.checkpointEveryCommits());
        } catch (SQLException e) {
            close();
            throw new StoreException("cannot open the store at " + file, e);
        }
    }

    private void migrate() {
        Flyway.configure()
                .dataSource(url, null, null)
                .locations("classpath:db/migration")
                .load()
                .migrate();
    }

    private Db open(Synchronous synchronous) throws SQLException {
        return new Db(connect(synchronous), decoded);
    }

    /** A connection to the file, with auto-commit off. */
    private Connection connect(Synchronous synchronous) throws SQLException {
        Properties properties = new Properties();
        properties.setProperty("journal_mode", "WAL");
        properties.setProperty("synchronous", synchronous.name());
        properties.setProperty("foreign_keys", "true");
        properties.setProperty("busy_timeout", "10000");
        // No statement reads generated keys; without this the driver asks SQLite for the last row id after every
        // insert.
        properties.setProperty("jdbc.get_generated_keys", "false");
        Connection connection = DriverManager.getConnection(url, properties);
        connection.setAutoCommit(false);
        return connection;
    }

    /**
     * Runs {@code work} in a write transaction and returns once it is committed.
     *
     * <p>Group commit: callers queue their work; whoever holds the writer runs every queued work (up to {@link
     * #MAX_BATCH}) in one SQLite transaction, each inside its own savepoint, commits once, and hands every caller its
     * result, waking each one (callers that find the writer busy wait parked, not in line for the lock, so that the
     * writer never waits for a woken caller to pass it on). A work that throws is rolled back to its savepoint alone and its caller gets the exception; the others
     * commit. Each caller still returns only after the commit that holds its writes, so durability is unchanged; under
     * concurrency many operations share one commit (and, with {@code synchronous=FULL}, one sync) instead of queueing
     * for one each. A work that calls {@code write} again joins the transaction it runs in.
     */
    @Override
    public <T> T write(Function<StoreTransaction, T> work) {
        requireNonNull(work, "work is null");
        if (writeLock.isHeldByCurrentThread()) {
            return work.apply(new Tx(writer, running, requestIds, committed, touched, runningRevisions));
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

    private void unlockAndWakeNext() {
        writeLock.unlock();
        // A write queued after the last batch waits parked: wake the first so that it leads.
        Queued<?> next = queue.peek();
        if (next != null) {
            LockSupport.unpark(next.caller);
        }
    }

    /** Runs {@code action} between write transactions: writes queue meanwhile, and the next one leads after it. */
    private <T> T holdingWrites(WalCheckpointer.SqlAction<T> action) throws SQLException {
        writeLock.lock();
        try {
            return action.run();
        } finally {
            unlockAndWakeNext();
        }
    }

    /** Holding the write lock: runs up to MAX_BATCH queued works in one transaction and completes them. */
    private void runBatch() {
        requestIds.betweenTransactions();
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
            touched.clear();
            try {
                for (Queued<?> queued : batch) {
                    queued.runIn(this, alone);
                }
                if (alone && batch.getFirst().failure != null) {
                    rollback(writer);
                } else {
                    writer.connection.commit();
                    commits = commits + 1; // only the lock holder writes it
                    checkpointer.committed(commits);
                    committed.apply(changesOf(batch));
                    batch.forEach(queued -> queued.revisions.forEach(this::keepRevision));
                }
                batch.forEach(Queued::complete);
                return;
            } catch (RuntimeException | Error e) {
                batchFailure = e;
            } catch (SQLException e) {
                batchFailure = new StoreException("commit failed", e);
            }
            rollback(writer);
            committed.forget(changesOf(batch));
            batch.forEach(Queued::reset);
            if (!isBusy(batchFailure) || attempt >= BUSY_ATTEMPTS) {
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

    /** A committed policy revision, from memory when it is there; otherwise read, and kept (revisions never change). */
    @Override
    public Optional<PolicyRevisionRecord> policyRevision(String sandboxId, long revision) {
        requireNonNull(sandboxId, "sandboxId is null");
        PolicyRevisionRecord known = revisions.get(new RevisionKey(sandboxId, revision));
        if (known != null) {
            return Optional.of(known);
        }
        Optional<PolicyRevisionRecord> read = read(tx -> tx.policyRevision(sandboxId, revision));
        read.ifPresent(this::keepRevision);
        return read;
    }

    /** Keeps a revision that is committed: read from the database, or inserted by a commit that succeeded. */
    private void keepRevision(PolicyRevisionRecord r) {
        if (revisions.size() >= MAX_REVISIONS) {
            revisions.clear();
        }
        // As a read returns it: the admission time to the stored millisecond.
        revisions.put(
                new RevisionKey(r.sandboxId(), r.revision()),
                new PolicyRevisionRecord(
                        r.sandboxId(),
                        r.revision(),
                        r.digest(),
                        r.document(),
                        Instant.ofEpochMilli(r.admitTime().toEpochMilli())));
    }

    /** The request with this id, outside any transaction; a new id is known absent without reading the database. */
    @Override
    public Optional<RequestRecord> request(String requestId) {
        requireNonNull(requestId, "requestId is null");
        if (!requestIds.mightHold(requestId)) {
            return Optional.empty();
        }
        return read(tx -> tx.request(requestId));
    }

    /** How many times the request-id filter was built from the table (for tests). */
    long requestIdRebuilds() {
        return requestIds.rebuilds();
    }

    private static List<CommittedRows.Change> changesOf(List<Queued<?>> batch) {
        if (batch.size() == 1) {
            return batch.getFirst().changes;
        }
        List<CommittedRows.Change> all = new ArrayList<>();
        batch.forEach(queued -> all.addAll(queued.changes));
        return all;
    }

    /**
     * The sandbox as last committed, from memory when it is there ({@link CommittedRows}); otherwise read, and kept
     * for the next look-up.
     */
    @Override
    public Optional<SandboxRecord> sandbox(String id) {
        requireNonNull(id, "id is null");
        SandboxRecord known = committed.get(id);
        if (known != null) {
            return Optional.of(known);
        }
        if (committed.deleted(id)) {
            return Optional.empty();
        }
        lookUpsRead.increment();
        long before = committed.sequence();
        Optional<SandboxRecord> row = read(tx -> tx.sandbox(id));
        row.ifPresent(r -> committed.fill(before, r));
        return row;
    }

    /** How many look-ups by id outside a transaction read the database (for tests). */
    long lookUpsRead() {
        return lookUpsRead.sum();
    }

    /** How many write transactions were committed (for tests). */
    long commits() {
        return commits;
    }

    /** How many writes wait for the writer (for tests). */
    int queuedWrites() {
        return queue.size();
    }

    /** Runs one statement of transaction control (SAVEPOINT, RELEASE, ROLLBACK TO) on the writer. */
    private void control(String sql) {
        try {
            writer.prepare(sql).execute();
        } catch (SQLException e) {
            throw new StoreException(sql + " failed", e);
        }
    }

    /**
     * One caller's work in the group-commit queue. Its fields are written by the thread running the batch, holding the
     * write lock, before it sets {@code done}; the caller reads them after it has seen {@code done}.
     */
    private static final class Queued<T> {
        private final Function<StoreTransaction, T> work;
        private final Thread caller;
        private T result;
        private RuntimeException failure;
        private Throwable batchFailure;
        private volatile boolean done;
        /** What the work changed in sandbox rows, if it did not fail. */
        private List<CommittedRows.Change> changes = List.of();
        /** The policy revisions the work inserted, if it did not fail. */
        private List<PolicyRevisionRecord> revisions = List.of();

        Queued(Function<StoreTransaction, T> work, Thread caller) {
            this.work = work;
            this.caller = caller;
        }

        /** Runs the work in the open transaction; a failure of its own is rolled back to its savepoint. */
        void runIn(SqliteStore store, boolean alone) {
            if (!alone) {
                store.control(SAVEPOINT);
            }
            List<CommittedRows.Change> mine = new ArrayList<>();
            List<PolicyRevisionRecord> myRevisions = new ArrayList<>();
            store.running = mine;
            store.runningRevisions = myRevisions;
            try {
                result = work.apply(
                        new Tx(store.writer, mine, store.requestIds, store.committed, store.touched, myRevisions));
                changes = mine;
                revisions = myRevisions;
            } catch (RuntimeException e) {
                if (isBusy(e)) {
                    throw e; // the whole batch runs again
                }
                failure = e;
                if (!alone) {
                    store.control(ROLLBACK_TO_SAVEPOINT);
                }
            } finally {
                store.running = null;
                store.runningRevisions = null;
            }
            if (!alone) {
                store.control(RELEASE_SAVEPOINT);
            }
        }

        void reset() {
            result = null;
            failure = null;
            changes = List.of();
            revisions = List.of();
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

    /** Whether {@code failure} (or a cause) is SQLite's SQLITE_BUSY, including its extended codes. */
    static boolean isBusy(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql && (sql.getErrorCode() & 0xff) == SQLITE_BUSY) {
                return true;
            }
        }
        return false;
    }

    @Override
    public <T> T read(Function<StoreTransaction, T> work) {
        Db reader;
        try {
            reader = readers.take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreException("interrupted while waiting for a store connection", e);
        }
        try {
            return work.apply(new Tx(reader, null, null, null, null, null));
        } finally {
            rollback(reader);
            readers.add(reader);
        }
    }

    private static void rollback(Db db) {
        try {
            db.connection.rollback();
        } catch (SQLException e) {
            throw new StoreException("rollback failed", e);
        }
    }

    /** How many sandboxes have their committed row kept in memory (for tests). */
    int committedRows() {
        return committed.size();
    }

    /** How many sandboxes have their spec and labels kept decoded (for tests). */
    int decodedEntries() {
        return decoded.size();
    }

    /** How many background checkpoints ran (for tests). */
    long checkpoints() {
        return checkpointer == null ? 0 : checkpointer.checkpoints();
    }

    /** How many times the write-ahead log was copied to its end holding the writes (for tests). */
    long logRestarts() {
        return checkpointer == null ? 0 : checkpointer.restarts();
    }

    /** How many times the checkpointer held the writes (for tests). */
    long logHolds() {
        return checkpointer == null ? 0 : checkpointer.holds();
    }

    @Override
    public void close() {
        if (checkpointer != null) {
            checkpointer.close();
        }
        requestIds.close();
        writeLock.lock();
        try {
            for (Db db : all) {
                try {
                    db.connection.close();
                } catch (SQLException e) {
                    // Closing anyway; nothing is pending on a connection we close.
                }
            }
            all.clear();
        } finally {
            writeLock.unlock();
        }
    }

    /** A connection and its prepared statements. */
    private static final class Db {
        final Connection connection;
        final Map<String, PreparedStatement> statements = new HashMap<>();
        final DecodedColumns decoded;

        Db(Connection connection, DecodedColumns decoded) {
            this.connection = connection;
            this.decoded = decoded;
        }

        PreparedStatement prepare(String sql) throws SQLException {
            PreparedStatement statement = statements.get(sql);
            if (statement == null) {
                statement = connection.prepareStatement(sql);
                statements.put(sql, statement);
            }
            statement.clearParameters();
            return statement;
        }
    }

    private static final class Tx implements StoreTransaction {
        private final Db db;
        /** Where a write transaction records what it changes in sandbox rows; null in a read-only one. */
        private final List<CommittedRows.Change> changes;
        /** The filter a write transaction adds the request ids it inserts to; null in a read-only one. */
        private final RequestIds requestIds;
        /** In a write transaction, the last committed rows, and the sandboxes the transaction wrote; else null. */
        private final CommittedRows committed;

        private final Set<String> touched;
        /** Where a write transaction records the policy revisions it inserts; null in a read-only one. */
        private final List<PolicyRevisionRecord> revisionsAdded;

        Tx(
                Db db,
                List<CommittedRows.Change> changes,
                RequestIds requestIds,
                CommittedRows committed,
                Set<String> touched,
                List<PolicyRevisionRecord> revisionsAdded) {
            this.db = db;
            this.changes = changes;
            this.requestIds = requestIds;
            this.committed = committed;
            this.touched = touched;
            this.revisionsAdded = revisionsAdded;
        }

        /** Before a write to a sandbox's row: from now on the transaction reads that row from the database. */
        private void touch(String id) {
            requireWritable();
            touched.add(id);
        }

        private void requireWritable() {
            if (changes == null) {
                throw new IllegalStateException("write in a read-only transaction");
            }
        }

        /**
         * The sandbox as this transaction sees it. In a write transaction a sandbox it has not written is as last
         * committed, which {@link CommittedRows} holds for recently used sandboxes: the single writer is running this
         * transaction, so no commit changes it meanwhile.
         */
        @Override
        public Optional<SandboxRecord> sandbox(String id) {
            if (committed != null && !touched.contains(id)) {
                SandboxRecord known = committed.get(id);
                if (known != null) {
                    return Optional.of(known);
                }
                if (committed.deleted(id)) {
                    return Optional.empty();
                }
            }
            return one(SELECT_SANDBOX, List.of(id));
        }

        @Override
        public Optional<SandboxRecord> sandboxByName(String workspace, String name) {
            return one(SELECT_SANDBOX_BY_NAME, List.of(workspace, name));
        }

        private Optional<SandboxRecord> one(String sql, List<Object> parameters) {
            List<SandboxRecord> rows = sandboxes(sql, parameters);
            return rows.isEmpty() ? Optional.empty() : Optional.of(rows.getFirst());
        }

        private List<SandboxRecord> sandboxes(String sql, List<Object> parameters) {
            try {
                PreparedStatement statement = db.prepare(sql);
                bind(statement, parameters);
                List<SandboxRecord> rows = new ArrayList<>();
                try (ResultSet rs = statement.executeQuery()) {
                    while (rs.next()) {
                        rows.add(readSandbox(rs, db.decoded));
                    }
                }
                return rows;
            } catch (SQLException e) {
                throw new StoreException("reading sandboxes failed", e);
            }
        }

        @Override
        public SandboxRecord insertSandbox(SandboxRecord s) {
            touch(s.id());
            SandboxRecord inserted = s.toBuilder().resourceVersion(1).build();
            String specJson = StoreJson.spec(s.spec());
            String labelsJson = StoreJson.labels(s.labels());
            String conditionsJson = StoreJson.conditions(s.conditions());
            try {
                PreparedStatement statement = db.prepare(INSERT_SANDBOX);
                Optional<PendingTransition> p = s.pending();
                bind(
                        statement,
                        List.of(
                                s.id(),
                                s.workspace(),
                                s.name(),
                                s.phase().name(),
                                s.generation(),
                                s.generationStart().toEpochMilli(),
                                s.launchRevision(),
                                s.launchDigest(),
                                s.runtimeGeneration(),
                                s.runtimeState(),
                                s.runtimeDetail(),
                                s.policyMode().name(),
                                s.admittedRevision(),
                                s.admittedDigest(),
                                specJson,
                                labelsJson,
                                conditionsJson,
                                nullable(p.map(t -> t.kind().name())),
                                nullable(p.map(PendingTransition::operationId)),
                                nullable(p.flatMap(PendingTransition::requestId)),
                                nullable(p.map(PendingTransition::expectedGeneration)),
                                nullable(p.map(t -> t.since().toEpochMilli())),
                                1L,
                                s.createTime().toEpochMilli(),
                                s.updateTime().toEpochMilli()));
                try {
                    statement.executeUpdate();
                } catch (SQLException e) {
                    if ((e.getErrorCode() & 0xff) == SQLITE_CONSTRAINT
                            && sandboxByName(s.workspace(), s.name()).isPresent()) {
                        throw new NameTakenException(s.workspace() + "/" + s.name() + " exists");
                    }
                    throw e;
                }
                PreparedStatement label = db.prepare(INSERT_LABEL);
                for (Map.Entry<String, String> entry : s.labels().entrySet()) {
                    bind(label, List.of(s.id(), entry.getKey(), entry.getValue()));
                    label.executeUpdate();
                }
                changes.add(new CommittedRows.Inserted(CommittedRows.inserted(
                        s, db.decoded.decode(s.id(), specJson, labelsJson), StoreJson.conditions(conditionsJson))));
                return inserted;
            } catch (SQLException e) {
                throw new StoreException("inserting sandbox " + s.id() + " failed", e);
            }
        }

        @Override
        public SandboxRecord updateSandbox(SandboxRecord s) {
            touch(s.id());
            long next = s.resourceVersion() + 1;
            Optional<PendingTransition> p = s.pending();
            String conditionsJson = StoreJson.conditions(s.conditions());
            try {
                PreparedStatement statement = db.prepare(UPDATE_SANDBOX);
                bind(
                        statement,
                        List.of(
                                s.phase().name(),
                                s.generation(),
                                s.generationStart().toEpochMilli(),
                                s.launchRevision(),
                                s.launchDigest(),
                                s.runtimeGeneration(),
                                s.runtimeState(),
                                s.runtimeDetail(),
                                s.admittedRevision(),
                                s.admittedDigest(),
                                conditionsJson,
                                nullable(p.map(t -> t.kind().name())),
                                nullable(p.map(PendingTransition::operationId)),
                                nullable(p.flatMap(PendingTransition::requestId)),
                                nullable(p.map(PendingTransition::expectedGeneration)),
                                nullable(p.map(t -> t.since().toEpochMilli())),
                                next,
                                s.updateTime().toEpochMilli(),
                                s.id(),
                                s.resourceVersion()));
                if (statement.executeUpdate() != 1) {
                    throw new StaleRecordException(
                            "sandbox " + s.id() + " changed since version " + s.resourceVersion());
                }
                changes.add(new CommittedRows.Updated(s, s.resourceVersion(), StoreJson.conditions(conditionsJson)));
                return s.toBuilder().resourceVersion(next).build();
            } catch (SQLException e) {
                throw new StoreException("updating sandbox " + s.id() + " failed", e);
            }
        }

        @Override
        public void deleteSandbox(String id, long expectedVersion) {
            touch(id);
            try {
                PreparedStatement statement = db.prepare(DELETE_SANDBOX);
                bind(statement, List.of(id, expectedVersion));
                if (statement.executeUpdate() != 1) {
                    throw new StaleRecordException("sandbox " + id + " changed since version " + expectedVersion);
                }
                db.decoded.forget(id);
                changes.add(new CommittedRows.Deleted(id));
            } catch (SQLException e) {
                throw new StoreException("deleting sandbox " + id + " failed", e);
            }
        }

        @Override
        public List<SandboxRecord> listSandboxes(SandboxFilter filter, Optional<SandboxKey> after, int limit) {
            StringBuilder sql = new StringBuilder(SELECT_SANDBOXES_PREFIX);
            List<Object> parameters = new ArrayList<>();
            filter.workspace().ifPresent(workspace -> {
                sql.append(FILTER_WORKSPACE);
                parameters.add(workspace);
            });
            filter.labels().entrySet().stream()
                    .sorted(Map.Entry.comparingByKey())
                    .forEach(label -> {
                        sql.append(FILTER_LABEL);
                        parameters.add(label.getKey());
                        parameters.add(label.getValue());
                    });
            if (!filter.phases().isEmpty()) {
                sql.append(FILTER_PHASE_PREFIX);
                List<SandboxPhase> phases = filter.phases().stream().sorted().toList();
                for (int i = 0; i < phases.size(); i++) {
                    sql.append(i == 0 ? "?" : ", ?");
                    parameters.add(phases.get(i).name());
                }
                sql.append(')');
            }
            after.ifPresent(key -> {
                sql.append(FILTER_AFTER);
                parameters.add(key.workspace());
                parameters.add(key.workspace());
                parameters.add(key.name());
            });
            sql.append(ORDER_AND_LIMIT);
            parameters.add((long) limit);
            return sandboxes(sql.toString(), parameters);
        }

        @Override
        public List<SandboxRecord> pendingSandboxes() {
            return sandboxes(SELECT_PENDING, List.of());
        }

        @Override
        public void insertPolicyRevision(PolicyRevisionRecord r) {
            requireWritable();
            try {
                PreparedStatement statement = db.prepare(INSERT_POLICY_REVISION);
                bind(
                        statement,
                        List.of(
                                r.sandboxId(),
                                r.revision(),
                                r.digest(),
                                r.document(),
                                r.admitTime().toEpochMilli()));
                statement.executeUpdate();
                revisionsAdded.add(r);
            } catch (SQLException e) {
                throw new StoreException("inserting policy revision failed", e);
            }
        }

        @Override
        public Optional<PolicyRevisionRecord> policyRevision(String sandboxId, long revision) {
            try {
                PreparedStatement statement = db.prepare(SELECT_POLICY_REVISION);
                bind(statement, List.of(sandboxId, revision));
                try (ResultSet rs = statement.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    return Optional.of(new PolicyRevisionRecord(
                            rs.getString(1),
                            rs.getLong(2),
                            rs.getString(3),
                            rs.getBytes(4),
                            Instant.ofEpochMilli(rs.getLong(5))));
                }
            } catch (SQLException e) {
                throw new StoreException("reading policy revision failed", e);
            }
        }

        @Override
        public Optional<RequestRecord> request(String requestId) {
            try {
                PreparedStatement statement = db.prepare(SELECT_REQUEST);
                bind(statement, List.of(requestId));
                try (ResultSet rs = statement.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    String resultJson = rs.getString(7);
                    long completeMs = rs.getLong(9);
                    boolean completed = !rs.wasNull();
                    return Optional.of(new RequestRecord(
                            rs.getString(1),
                            rs.getString(2),
                            rs.getString(3),
                            Optional.ofNullable(rs.getString(4)),
                            rs.getLong(5),
                            "DONE".equals(rs.getString(6))
                                    ? Optional.of(StoreJson.result(resultJson))
                                    : Optional.empty(),
                            Instant.ofEpochMilli(rs.getLong(8)),
                            completed ? Optional.of(Instant.ofEpochMilli(completeMs)) : Optional.empty(),
                            rs.getString(10)));
                }
            } catch (SQLException e) {
                throw new StoreException("reading request failed", e);
            }
        }

        @Override
        public void insertRequest(RequestRecord r) {
            requireWritable();
            requestIds.adding(r.requestId());
            try {
                PreparedStatement statement = db.prepare(INSERT_REQUEST);
                bind(
                        statement,
                        List.of(
                                r.requestId(),
                                r.method(),
                                r.fingerprint(),
                                nullable(r.sandboxId()),
                                r.generation(),
                                r.done() ? "DONE" : "PENDING",
                                nullable(r.result().map(StoreJson::result)),
                                r.createTime().toEpochMilli(),
                                nullable(r.completeTime().map(Instant::toEpochMilli)),
                                r.principal()));
                statement.executeUpdate();
            } catch (SQLException e) {
                throw new StoreException("inserting request failed", e);
            }
        }

        @Override
        public void completeRequest(String requestId, RequestResult result, Instant completeTime) {
            requireWritable();
            try {
                PreparedStatement statement = db.prepare(COMPLETE_REQUEST);
                bind(statement, List.of(StoreJson.result(result), completeTime.toEpochMilli(), requestId));
                if (statement.executeUpdate() != 1) {
                    throw new StaleRecordException("request " + requestId + " is not pending");
                }
            } catch (SQLException e) {
                throw new StoreException("completing request failed", e);
            }
        }

        @Override
        public void replaceRequestResult(String requestId, RequestResult result) {
            requireWritable();
            try {
                PreparedStatement statement = db.prepare(REPLACE_REQUEST_RESULT);
                bind(statement, List.of(StoreJson.result(result), requestId));
                if (statement.executeUpdate() != 1) {
                    throw new StaleRecordException("request " + requestId + " is not done");
                }
            } catch (SQLException e) {
                throw new StoreException("replacing a request's result failed", e);
            }
        }

        @Override
        public int pruneRequests(Instant cutoff, int limit) {
            requireWritable();
            if (limit < 1) {
                throw new IllegalArgumentException("limit must be positive: " + limit);
            }
            try {
                long cutoffMs = cutoff.toEpochMilli();
                PreparedStatement statement = db.prepare(PRUNE_REQUESTS);
                bind(statement, List.of(firstAdmittedSince(cutoffMs), cutoffMs, limit));
                return statement.executeUpdate();
            } catch (SQLException e) {
                throw new StoreException("pruning requests failed", e);
            }
        }

        /**
         * The rowid from which requests were admitted at or after {@code cutoffMs}: each admission appends a row with
         * a larger rowid than any stored, so create_ms rises with the rowid and a bisection finds it in a few dozen
         * index look-ups, however many records there are. Should the clock have stepped back, the bisection finds one
         * of the points where create_ms crosses the cutoff, and the rows beyond it wait for a later pruning; a record
         * is never removed before its retention, which the pruning's own condition on complete_ms decides.
         */
        private long firstAdmittedSince(long cutoffMs) throws SQLException {
            long low;
            long high;
            try (ResultSet rs = db.prepare(REQUEST_ROWIDS).executeQuery()) {
                rs.next();
                low = rs.getLong(1);
                if (rs.wasNull()) {
                    return 0; // no requests
                }
                high = rs.getLong(2) + 1;
            }
            PreparedStatement first = db.prepare(FIRST_REQUEST_FROM);
            // Rows below low were admitted before the cutoff; the answer is at most high.
            while (low < high) {
                long middle = low + (high - low) / 2;
                first.setLong(1, middle);
                try (ResultSet rs = first.executeQuery()) {
                    rs.next(); // a row exists: middle < high <= max + 1
                    long rowid = rs.getLong(1);
                    if (rs.getLong(2) < cutoffMs) {
                        low = rowid + 1;
                    } else {
                        high = middle;
                    }
                }
            }
            return low;
        }

        @Override
        public Optional<String> meta(String key) {
            try {
                PreparedStatement statement = db.prepare(SELECT_META);
                bind(statement, List.of(key));
                try (ResultSet rs = statement.executeQuery()) {
                    return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
                }
            } catch (SQLException e) {
                throw new StoreException("reading meta failed", e);
            }
        }

        @Override
        public void putMeta(String key, String value) {
            requireWritable();
            try {
                PreparedStatement statement = db.prepare(UPSERT_META);
                bind(statement, List.of(key, value));
                statement.executeUpdate();
            } catch (SQLException e) {
                throw new StoreException("writing meta failed", e);
            }
        }
    }

    /** A marker for SQL NULL in parameter lists (which cannot hold null). */
    private enum Null {
        VALUE
    }

    private static Object nullable(Optional<?> value) {
        return value.isPresent() ? value.get() : Null.VALUE;
    }

    private static void bind(PreparedStatement statement, List<Object> parameters) throws SQLException {
        for (int i = 0; i < parameters.size(); i++) {
            Object value = parameters.get(i);
            int index = i + 1;
            switch (value) {
                case Null n -> statement.setNull(index, Types.NULL);
                case String s -> statement.setString(index, s);
                case Long l -> statement.setLong(index, l);
                case Integer n -> statement.setLong(index, n);
                case byte[] bytes -> statement.setBytes(index, bytes);
                default ->
                    throw new IllegalArgumentException("unsupported parameter type "
                            + value.getClass().getName().toLowerCase(Locale.ROOT));
            }
        }
    }

    private static SandboxRecord readSandbox(ResultSet rs, DecodedColumns decodedColumns) throws SQLException {
        String pendingKind = rs.getString(18);
        DecodedColumns.Decoded columns = decodedColumns.decode(rs.getString(1), rs.getString(15), rs.getString(16));
        Optional<PendingTransition> pending = Optional.empty();
        if (pendingKind != null) {
            pending = Optional.of(new PendingTransition(
                    TransitionKind.valueOf(pendingKind),
                    rs.getString(19),
                    Optional.ofNullable(rs.getString(20)),
                    rs.getLong(21),
                    Instant.ofEpochMilli(rs.getLong(22))));
        }
        return new SandboxRecord(
                rs.getString(1),
                rs.getString(2),
                rs.getString(3),
                SandboxPhase.valueOf(rs.getString(4)),
                rs.getLong(5),
                Instant.ofEpochMilli(rs.getLong(6)),
                rs.getLong(7),
                rs.getString(8),
                rs.getLong(9),
                rs.getString(10),
                rs.getString(11),
                PolicyMode.valueOf(rs.getString(12)),
                rs.getLong(13),
                rs.getString(14),
                columns.spec(),
                columns.labels(),
                StoreJson.conditions(rs.getString(17)),
                pending,
                rs.getLong(23),
                Instant.ofEpochMilli(rs.getLong(24)),
                Instant.ofEpochMilli(rs.getLong(25)));
    }
}
