package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Copies the store's write-ahead log back into the database file on a thread of its own, and makes the log start over
 * without making a commit wait for the disk.
 *
 * <p>Left to itself, SQLite checkpoints inside the commit that pushes the log past 1,000 pages: that commit (and every
 * write queued behind the single writer) then waits for 1,000 pages to be copied and the database file to be synced to
 * disk. Here this thread runs passive checkpoints instead, after {@link #EVERY_COMMITS} commits or once per {@link
 * #IDLE_INTERVAL} when fewer happened. A passive checkpoint never waits for readers or the writer and takes no lock
 * they need, so commits go on meanwhile.
 *
 * <p>The log starts over from its beginning only when a write begins after everything in it was copied (and the
 * database file synced), which a steady stream of commits never allows: a passive checkpoint copies what was committed
 * when it began, and more has been committed by the time it ends. So once the log holds {@link #RESTART_PAGES}, this
 * thread copies and syncs all but the last moments of it with commits going on, twice (each pass leaves less), and
 * then copies the rest holding the store's writes, which wait meanwhile for a small copy and two small syncs instead
 * of the whole log. The next write starts the log over. A reader that began before the hold (a rebuild of the
 * request-id filter scans for seconds) keeps it from doing so; after such a hold, the next one waits until the log
 * has grown by a sixteenth of the restart size, instead of meeting the same reader at every checkpoint.
 *
 * <p>The writer's own checkpoint at {@link #LOG_LIMIT_PAGES} stays as a bound, for when readers keep the log from being
 * copied to its end: it copies what is left and syncs the database file inside a commit, 10 to 30 ms here. Durability
 * is unchanged: a commit is in the log (synced there with {@code synchronous=FULL}) before the writer returns, whether
 * or not it was checkpointed yet.
 */
final class WalCheckpointer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(WalCheckpointer.class);
    /**
     * A checkpoint after this many commits: seldom enough that a page written by many commits meanwhile (the last page
     * of a table, a row changed by an operation's intent and again by its result) is copied once, and that the two
     * syncs of each checkpoint stay few (a few checkpoints a second at 2,000 operations a second), yet what the log
     * holds beyond the last checkpoint stays some tens of MiB at most.
     */
    static final long EVERY_COMMITS = 1024;
    /** The writer's own checkpoint threshold ({@code wal_autocheckpoint}), in pages: 256 MiB of 4 KiB pages. */
    static final int LOG_LIMIT_PAGES = 65_536;
    /**
     * A log of this many pages (224 MiB of 4 KiB pages) is made to start over: close to {@link #LOG_LIMIT_PAGES}, so
     * that the writes are held as seldom as the writer's own checkpoint would hold them (a hold took 6 to 7 ms at the
     * median here, whatever the log's length, and up to 42 ms when other work kept the disk busy), with room left for
     * the passes before the hold.
     */
    static final int RESTART_PAGES = 57_344;
    /** At least this often while commits happen. */
    static final Duration IDLE_INTERVAL = Duration.ofSeconds(1);

    /** Runs an action while no write transaction runs; the store's writes wait meanwhile. */
    @FunctionalInterface
    interface Writes {
        <T> T held(SqlAction<T> action) throws SQLException;
    }

    @FunctionalInterface
    interface SqlAction<T> {
        T run() throws SQLException;
    }

    /** What a checkpoint reports: frames in the log, and how many of them are in the database file. */
    private record Progress(long logFrames, long copiedFrames) {
        boolean complete() {
            return logFrames == copiedFrames;
        }
    }

    private final Connection connection;
    private final Path database;
    private final LongSupplier commits;
    private final Writes writes;
    private final long restartPages;
    private final long everyCommits;
    private final Thread thread;
    private volatile boolean closed;
    private volatile long checkpointedAt;
    private final AtomicLong checkpoints = new AtomicLong();
    private final AtomicLong restarts = new AtomicLong();
    private final AtomicLong holds = new AtomicLong();
    /** No hold before the log has this many frames again, after a hold that did not make it start over. */
    private long retryAtFrames;

    /**
     * @param connection a connection of its own, in auto-commit mode; closed by {@link #close}
     * @param database the database file
     * @param commits the store's count of commits so far
     * @param writes holds the store's writes for the end of a checkpoint that lets the log start over
     * @param restartPages how long a log is made to start over ({@link #RESTART_PAGES}, less in tests)
     * @param everyCommits how many commits wake this thread ({@link #EVERY_COMMITS}, less in tests)
     */
    WalCheckpointer(
            Connection connection,
            Path database,
            LongSupplier commits,
            Writes writes,
            long restartPages,
            long everyCommits) {
        this.connection = requireNonNull(connection, "connection is null");
        this.database = requireNonNull(database, "database is null");
        this.commits = requireNonNull(commits, "commits is null");
        this.writes = requireNonNull(writes, "writes is null");
        this.restartPages = restartPages;
        if (everyCommits < 1) {
            throw new IllegalArgumentException("everyCommits must be at least 1, was " + everyCommits);
        }
        this.everyCommits = everyCommits;
        this.checkpointedAt = commits.getAsLong();
        this.thread =
                Thread.ofPlatform().name("sandgate-store-checkpoint").daemon().unstarted(this::run);
        thread.start();
    }

    /** Called by the writer after each commit: wakes the thread when a checkpoint is due. Cheap. */
    void committed(long commitCount) {
        if (commitCount - checkpointedAt >= everyCommits) {
            LockSupport.unpark(thread);
        }
    }

    /** How many checkpoints ran (for tests). */
    long checkpoints() {
        return checkpoints.get();
    }

    /** How many times the log was copied to its end holding the writes, so that it starts over (for tests). */
    long restarts() {
        return restarts.get();
    }

    /** How many times the writes were held (for tests). */
    long holds() {
        return holds.get();
    }

    private void run() {
        while (!closed) {
            LockSupport.parkNanos(this, IDLE_INTERVAL.toNanos());
            long now = commits.getAsLong();
            if (closed || now == checkpointedAt) {
                continue;
            }
            checkpointedAt = now;
            try {
                checkpoint();
                checkpoints.incrementAndGet();
            } catch (SQLException | RuntimeException e) {
                // The thread goes on: a log that no one checkpoints would grow until the writer's own limit.
                if (!closed) {
                    log.warn("a background checkpoint of the store failed; the next one retries: {}", e.toString());
                    LockSupport.parkNanos(this, TimeUnit.SECONDS.toNanos(1));
                }
            }
        }
    }

    private void checkpoint() throws SQLException {
        Progress progress = passive();
        if (progress.logFrames() < restartPages) {
            retryAtFrames = 0; // the log started over
            return;
        }
        if (progress.logFrames() < retryAtFrames || closed) {
            return;
        }
        // Two passes with commits going on, each syncing what it copied, so that little is left for the held one.
        for (int pass = 0; pass < 2; pass++) {
            syncDatabase();
            progress = passive();
            if (progress.logFrames() < restartPages) {
                return; // the log started over meanwhile
            }
        }
        syncDatabase();
        long begin = System.nanoTime();
        Progress held = writes.held(this::passive);
        long nanos = System.nanoTime() - begin;
        holds.incrementAndGet();
        if (held.complete()) {
            restarts.incrementAndGet();
        }
        // A reader that began before the hold keeps the log from being copied to its end, or from starting over at the
        // next write. Holding again at the next wake-up would most likely meet it again: wait for the log to grow.
        retryAtFrames = held.logFrames() + restartPages / 16;
        log.debug(
                "write-ahead log of {} frames, writes held {} us, copied to its end: {}",
                held.logFrames(),
                TimeUnit.NANOSECONDS.toMicros(nanos),
                held.complete());
    }

    private Progress passive() throws SQLException {
        try (Statement statement = connection.createStatement();
                ResultSet rs = statement.executeQuery("PRAGMA wal_checkpoint(PASSIVE)")) {
            rs.next(); // busy, frames in the log, frames checkpointed
            return new Progress(rs.getLong(2), rs.getLong(3));
        }
    }

    /**
     * Syncs the pages copied into the database file so far, with commits going on, so that the sync of a checkpoint
     * that holds the writes has little left to do (a sync writes every page of the file, whoever copied it).
     */
    private void syncDatabase() throws SQLException {
        try (FileChannel channel = FileChannel.open(database, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException e) {
            throw new SQLException("cannot sync " + database.getFileName(), e);
        }
    }

    @Override
    public void close() {
        closed = true;
        LockSupport.unpark(thread);
        try {
            thread.join(TimeUnit.SECONDS.toMillis(30));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            connection.close();
        } catch (SQLException e) {
            // Closing anyway; a checkpoint connection holds nothing that needs saving.
        }
    }
}
