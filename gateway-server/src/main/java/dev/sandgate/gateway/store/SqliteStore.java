package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Function;
import org.flywaydb.core.Flyway;

/**
 * The embedded store: one SQLite file in WAL mode, migrated by Flyway (db/migration).
 *
 * <p>Writes go through one connection ({@link GroupCommit}), so a {@link #write} transaction reads and writes without
 * interference. Reads use a small pool of other connections; in WAL mode they see the last committed state and never
 * block the writer. The gateway holds its data directory's lock, so this process is the only writer, and the store
 * keeps what a single writer may in memory ({@link CachingStore}).
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

    private static final int READERS = 4;
    /**
     * The writer's page cache in KiB (SQLite's default is 2 MiB), native memory outside the Java heap: with 10,000
     * sandboxes and the day's request records the pages of a commit were often no longer cached and read again.
     */
    private static final int WRITER_CACHE_KIB = 16 * 1024;

    private final String url;
    private final List<PreparedConnection> opened = new ArrayList<>();
    private final DecodedColumns decoded = new DecodedColumns();
    private SqlStore sql;
    private CachingStore store;
    private WalCheckpointer checkpointer;

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
        RequestIds requestIds =
                new RequestIds(tuning.requestIdsExpected(), () -> connect(synchronous), tuning.scanHook());
        migrate();
        try {
            PreparedConnection writer = open(synchronous);
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
            List<PreparedConnection> readers = new ArrayList<>();
            for (int i = 0; i < READERS; i++) {
                readers.add(open(synchronous));
            }
            sql = new SqlStore(SqlDialect.SQLITE, writer, Readers.fixed(readers));
            opened.clear(); // closed by the store from now on
            store = new CachingStore(sql, requestIds);
            Connection checkpoints = connect(synchronous);
            checkpoints.setAutoCommit(true);
            GroupCommit writes = sql.writes();
            checkpointer = new WalCheckpointer(
                    checkpoints,
                    file,
                    writes::commits,
                    writes::holding,
                    tuning.logRestartPages(),
                    tuning.checkpointEveryCommits());
            writes.afterCommit(checkpointer::committed);
        } catch (SQLException e) {
            requestIds.close();
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

    private PreparedConnection open(Synchronous synchronous) throws SQLException {
        PreparedConnection connection = new PreparedConnection(connect(synchronous), decoded);
        opened.add(connection);
        return connection;
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

    @Override
    public <T> T write(Function<StoreTransaction, T> work) {
        return store.write(work);
    }

    @Override
    public <T> T read(Function<StoreTransaction, T> work) {
        return store.read(work);
    }

    @Override
    public Optional<SandboxRecord> sandbox(String id) {
        return store.sandbox(id);
    }

    @Override
    public Optional<RuntimeState> runtimeState(String id) {
        return store.runtimeState(id);
    }

    @Override
    public Optional<RequestRecord> request(String requestId) {
        return store.request(requestId);
    }

    @Override
    public Optional<PolicyRevisionRecord> policyRevision(String sandboxId, long revision) {
        return store.policyRevision(sandboxId, revision);
    }

    /** Whether {@code failure} (or a cause) is SQLite's SQLITE_BUSY, including its extended codes. */
    static boolean isBusy(Throwable failure) {
        return SqlDialect.SQLITE.isRetryable(failure);
    }

    /** How many times the request-id filter was built from the table (for tests). */
    long requestIdRebuilds() {
        return store.requestIdRebuilds();
    }

    /** How many look-ups by id outside a transaction read the database (for tests). */
    long lookUpsRead() {
        return store.lookUpsRead();
    }

    /** How many write transactions were committed (for tests). */
    long commits() {
        return sql.writes().commits();
    }

    /** How many writes wait for the writer (for tests). */
    int queuedWrites() {
        return sql.writes().queuedWrites();
    }

    /** How many sandboxes have their committed row kept in memory (for tests). */
    int committedRows() {
        return store.committedRows();
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
        if (store != null) {
            store.close();
        } else if (sql != null) {
            sql.close();
        }
        opened.forEach(PreparedConnection::close);
        opened.clear();
    }
}
