package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Copies the store's write-ahead log back into the database file on a thread of its own.
 *
 * <p>Left to itself, SQLite checkpoints inside the commit that pushes the log past 1,000 pages: that commit (and every
 * write queued behind the single writer) then waits for 1,000 pages to be copied and the database file to be synced to
 * disk. Here this thread runs passive checkpoints instead, after {@link #EVERY_COMMITS} commits or once per {@link
 * #IDLE_INTERVAL} when fewer happened. A passive checkpoint never waits for readers or the writer and takes no lock
 * they need, so commits go on meanwhile.
 *
 * <p>The log starts over from its beginning only when a write begins after everything in it was copied, which a
 * steady stream of commits never allows. So the writer still checkpoints, but only when the log reaches {@link
 * #LOG_LIMIT_PAGES}, and then copies only the few pages this thread has not copied yet: the log stays bounded and the
 * commit path syncs the database file a small fraction as often. Durability is unchanged: a commit is in the log
 * (synced there with {@code synchronous=FULL}) before the writer returns, whether or not it was checkpointed yet.
 *
 * <p>That checkpoint in the commit path still holds the writer, and every write queued behind it, for the copy and
 * two syncs: 5 to 20 ms and more here. Under sustained load the log fills at about four pages per write, so the limit
 * sets how often that happens; at 16 MiB it was four times a second at 2,000 lifecycle calls per second. The limit is
 * therefore large, and the log file, which SQLite reuses from its start, reaches that size under sustained load.
 */
final class WalCheckpointer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(WalCheckpointer.class);
    /** A checkpoint after this many commits. */
    static final long EVERY_COMMITS = 64;
    /** The writer's own checkpoint threshold ({@code wal_autocheckpoint}), in pages: 256 MiB of 4 KiB pages. */
    static final int LOG_LIMIT_PAGES = 65_536;
    /** At least this often while commits happen. */
    static final Duration IDLE_INTERVAL = Duration.ofSeconds(1);

    private final Connection connection;
    private final LongSupplier commits;
    private final Thread thread;
    private volatile boolean closed;
    private volatile long checkpointedAt;
    private volatile long checkpoints;

    /**
     * @param connection a connection of its own, in auto-commit mode; closed by {@link #close}
     * @param commits the store's count of commits so far
     */
    WalCheckpointer(Connection connection, LongSupplier commits) {
        this.connection = requireNonNull(connection, "connection is null");
        this.commits = requireNonNull(commits, "commits is null");
        this.checkpointedAt = commits.getAsLong();
        this.thread =
                Thread.ofPlatform().name("sandgate-store-checkpoint").daemon().unstarted(this::run);
        thread.start();
    }

    /** Called by the writer after each commit: wakes the thread when a checkpoint is due. Cheap. */
    void committed(long commitCount) {
        if (commitCount - checkpointedAt >= EVERY_COMMITS) {
            LockSupport.unpark(thread);
        }
    }

    /** How many checkpoints ran (for tests). */
    long checkpoints() {
        return checkpoints;
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
                checkpoints++; // only this thread writes it
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
        try (Statement statement = connection.createStatement();
                ResultSet rs = statement.executeQuery("PRAGMA wal_checkpoint(PASSIVE)")) {
            rs.next(); // busy, frames in the log, frames checkpointed: nothing to act on
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
