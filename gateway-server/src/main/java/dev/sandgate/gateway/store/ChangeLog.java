package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import com.google.gson.JsonParser;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * The ordered log of sandbox changes on PostgreSQL (table sandbox_change), by which every replica streams the changes
 * that any replica commits. {@link SqlTransaction} appends a row for every insert, update and delete of a sandbox row,
 * in the writing transaction, and notifies {@link #CHANNEL}, which PostgreSQL delivers at the commit. A follower opens
 * one of these, a connection of its own that listens on the channel, and reads the rows after its position in
 * sequence order ({@link #after}).
 *
 * <p>A row's sequence number is taken before its transaction commits, so a row may become visible after rows with
 * larger numbers: every {@link Page} carries the snapshot it was read in, so that a follower can tell when the
 * transactions that may still fill a hole have all ended ({@link Snapshot#allEndedBy}).
 */
public final class ChangeLog implements AutoCloseable {
    /** The channel every sandbox change is notified on (with an empty payload). */
    public static final String CHANNEL = "sandgate_sandbox_change";

    private static final String APPEND = "WITH logged AS (INSERT INTO sandbox_change (sandbox_id, resource_version,"
            + " change_type, sandbox_json, change_ms) VALUES (?, ?, ?, ?, ?) RETURNING seq)"
            + " SELECT pg_notify('" + CHANNEL + "', '') FROM logged";

    /** The prune mark (0 if its row is missing). */
    private static final String PRUNED_THROUGH =
            "COALESCE((SELECT through FROM sandbox_change_pruned WHERE id = 1), 0)";

    /**
     * How far the next transaction id is ahead of the statement's snapshot's xmax, read without taking a transaction
     * id: {@code age(x)} is the next id minus {@code x} (for the snapshot's xmax, as a 32-bit xid). A snapshot's xmax
     * is one past the newest <em>ended</em> transaction, so a transaction that took its id after that one and still
     * runs is neither below xmax nor among the snapshot's running ids: only the next id bounds the ids that were taken.
     */
    private static final String AHEAD =
            "age(((pg_snapshot_xmax(pg_current_snapshot())::text::bigint % 4294967296)::text)::xid)";

    /**
     * The rows after a position and, on a row of its own (seq null) when there are none, the prune mark and the
     * statement's snapshot: all read in one snapshot.
     */
    private static final String AFTER = "SELECT p.through, p.snap, p.ahead, c.seq, c.change_type, c.sandbox_json,"
            + " c.change_ms FROM (SELECT " + PRUNED_THROUGH + " AS through, pg_current_snapshot()::text AS snap, "
            + AHEAD + " AS ahead) p"
            + " LEFT JOIN LATERAL (SELECT seq, change_type, sandbox_json, change_ms FROM sandbox_change WHERE seq > ?"
            + " ORDER BY seq LIMIT ?) c ON true ORDER BY c.seq";

    /** The newest row's sequence number (null without rows), with the prune mark and the statement's snapshot. */
    private static final String NEWEST =
            "SELECT " + PRUNED_THROUGH + " AS through, pg_current_snapshot()::text AS snap, " + AHEAD
                    + " AS ahead, (SELECT max(seq) FROM sandbox_change) AS newest";

    /**
     * Raises the prune mark to the larger of its two bounds (by age, by count) and removes the rows up to it. The bound
     * by age is {@code max(seq + 0)}, not {@code max(seq)}: the latter the planner answers by walking the primary key
     * down from the newest row until one is old enough, past every row within retention (it takes the rows' times for
     * unrelated to their order); {@code + 0} makes it read the old rows alone, from the index on {@code (change_ms,
     * seq)} (migration V8).
     */
    private static final String PRUNE = "WITH mark AS (INSERT INTO sandbox_change_pruned (id, through) VALUES (1,"
            + " GREATEST(COALESCE((SELECT max(seq + 0) FROM sandbox_change WHERE change_ms < ?), 0),"
            + " COALESCE((SELECT max(seq) FROM sandbox_change), 0) - ?)) ON CONFLICT (id) DO UPDATE SET through ="
            + " GREATEST(sandbox_change_pruned.through, excluded.through) RETURNING through)"
            + " DELETE FROM sandbox_change WHERE seq <= (SELECT through FROM mark)";

    /** What a change did to its sandbox row. */
    public enum Kind {
        ADDED,
        MODIFIED,
        REMOVED
    }

    /**
     * One row of the log.
     *
     * @param sequence its position
     * @param kind insert, update or delete
     * @param sandbox the record after the change (for REMOVED, as it was deleted), without environment values and
     *     pending transition
     * @param time when it was written (the writer's clock)
     */
    public record Entry(long sequence, Kind kind, SandboxRecord sandbox, Instant time) {
        public Entry {
            requireNonNull(kind, "kind is null");
            requireNonNull(sandbox, "sandbox is null");
            requireNonNull(time, "time is null");
        }
    }

    /**
     * A snapshot as {@code pg_current_snapshot()} gives it, with the next transaction id when it was read: every
     * transaction id below {@code xmin} had ended, those in {@code inProgress} were running, and so may those from
     * {@code xmax} up to {@code nextXid} (PostgreSQL's xmax is one past the newest ended transaction, not the next id:
     * a transaction that took its id after that one and has not ended is in neither). None at or above {@code nextXid}
     * had begun.
     */
    public record Snapshot(long xmin, long xmax, Set<Long> inProgress, long nextXid) {
        /** An {@code age} this large is not a distance (the xid was not a normal one): the next id is unknown. */
        private static final long UNKNOWN_AHEAD = Integer.MAX_VALUE;

        public Snapshot {
            inProgress = Set.copyOf(inProgress);
            if (nextXid < xmax) {
                throw new IllegalArgumentException("nextXid " + nextXid + " is below xmax " + xmax);
            }
        }

        /**
         * Parses {@code xmin:xmax:xip,...}, with {@code ahead}: how far the next transaction id was ahead of xmax
         * (Integer.MAX_VALUE when PostgreSQL could not tell: the snapshot then counts every later id as running).
         */
        static Snapshot parse(String text, long ahead) {
            String[] parts = text.split(":", -1);
            if (parts.length != 3) {
                throw new StoreException("unexpected snapshot " + text);
            }
            Set<Long> running = new HashSet<>();
            if (!parts[2].isEmpty()) {
                for (String xid : parts[2].split(",", -1)) {
                    running.add(Long.parseLong(xid));
                }
            }
            long xmax = Long.parseLong(parts[1]);
            long next = ahead < 0 || ahead >= UNKNOWN_AHEAD ? Long.MAX_VALUE : xmax + ahead;
            return new Snapshot(Long.parseLong(parts[0]), xmax, running, next);
        }

        /**
         * Whether every transaction that may have been running at this snapshot had ended by {@code later}, a snapshot
         * taken after it: those it lists as running, and those from its xmax up to its next id.
         */
        public boolean allEndedBy(Snapshot later) {
            for (long xid : inProgress) {
                if (later.running(xid)) {
                    return false;
                }
            }
            // Ids from xmax up to nextXid: one at or above the later xmax has not ended; below it, the later snapshot
            // lists those still running.
            long from = Math.max(xmax, later.xmin());
            if (nextXid > Math.max(from, later.xmax())) {
                return false;
            }
            for (long xid : later.inProgress()) {
                if (xid >= from && xid < nextXid) {
                    return false;
                }
            }
            return true;
        }

        /** Whether {@code xid}, begun before this snapshot, was still running at it. */
        private boolean running(long xid) {
            return xid >= xmin && (xid >= xmax || inProgress.contains(xid));
        }
    }

    /**
     * What one read found, all in one snapshot.
     *
     * @param prunedThrough the largest sequence number the leader may have pruned: rows up to it may be gone
     * @param snapshot the snapshot the rows were read in
     * @param entries the rows after the position asked for, in sequence order
     */
    public record Page(long prunedThrough, Snapshot snapshot, List<Entry> entries) {
        public Page {
            requireNonNull(snapshot, "snapshot is null");
            entries = List.copyOf(entries);
        }
    }

    /**
     * The log's head.
     *
     * @param prunedThrough as in {@link Page}
     * @param sequence the newest row's sequence number, or the prune mark when there is none
     * @param snapshot the snapshot it was read in
     */
    public record Newest(long prunedThrough, long sequence, Snapshot snapshot) {
        public Newest {
            requireNonNull(snapshot, "snapshot is null");
        }
    }

    private final Connection connection;
    private final PGConnection notifications;
    /** The follower's read, prepared once (it runs every second, and every few milliseconds at a hole). */
    private PreparedStatement after;

    private ChangeLog(Connection connection) throws SQLException {
        this.connection = connection;
        this.notifications = connection.unwrap(PGConnection.class);
    }

    /** Opens a connection of its own that listens on {@link #CHANNEL}. */
    static ChangeLog open(PostgresStore.Settings settings) {
        Connection connection = null;
        try {
            connection = PostgresStore.connect(settings);
            connection.setAutoCommit(true);
            try (Statement listen = connection.createStatement()) {
                listen.execute("LISTEN " + CHANNEL);
            }
            return new ChangeLog(connection);
        } catch (SQLException e) {
            if (connection != null) {
                try {
                    connection.close();
                } catch (SQLException closing) {
                    e.addSuppressed(closing);
                }
            }
            throw new StoreException("cannot open the change log at " + settings.url(), e);
        }
    }

    /** Appends a row for {@code sandbox} in the writer's open transaction, and notifies the channel at its commit. */
    static void append(PreparedConnection db, Kind kind, SandboxRecord sandbox, Instant time) throws SQLException {
        PreparedStatement statement = db.prepare(APPEND);
        statement.setString(1, sandbox.id());
        statement.setLong(2, sandbox.resourceVersion());
        statement.setString(3, kind.name());
        statement.setString(4, ReplyJson.sandbox(sandbox).toString());
        statement.setLong(5, time.toEpochMilli());
        try (ResultSet rs = statement.executeQuery()) {
            rs.next();
        }
    }

    /** Up to {@code limit} rows after {@code sequence}, in order. */
    public Page after(long sequence, int limit) {
        try {
            if (after == null) {
                after = connection.prepareStatement(AFTER);
            }
            PreparedStatement statement = after;
            statement.setLong(1, sequence);
            statement.setInt(2, limit);
            long pruned = 0;
            Snapshot snapshot = null;
            List<Entry> entries = new ArrayList<>();
            try (ResultSet rs = statement.executeQuery()) {
                while (rs.next()) {
                    pruned = rs.getLong("through");
                    if (snapshot == null) {
                        snapshot = Snapshot.parse(rs.getString("snap"), rs.getLong("ahead"));
                    }
                    long seq = rs.getLong("seq");
                    if (!rs.wasNull()) {
                        entries.add(new Entry(
                                seq,
                                Kind.valueOf(rs.getString("change_type")),
                                ReplyJson.sandbox(JsonParser.parseString(rs.getString("sandbox_json"))
                                        .getAsJsonObject()),
                                Instant.ofEpochMilli(rs.getLong("change_ms"))));
                    }
                }
            }
            return new Page(pruned, requireNonNull(snapshot, "no snapshot"), entries);
        } catch (SQLException | RuntimeException e) {
            throw new StoreException("reading the change log failed", e);
        }
    }

    /** The newest row's position, read with its snapshot. */
    public Newest newest() {
        try (PreparedStatement statement = connection.prepareStatement(NEWEST);
                ResultSet rs = statement.executeQuery()) {
            rs.next();
            long pruned = rs.getLong("through");
            long newest = rs.getLong("newest");
            if (rs.wasNull()) {
                newest = pruned;
            }
            return new Newest(
                    pruned, Math.max(newest, pruned), Snapshot.parse(rs.getString("snap"), rs.getLong("ahead")));
        } catch (SQLException e) {
            throw new StoreException("reading the change log failed", e);
        }
    }

    /**
     * Waits up to {@code timeout} for a notification on {@link #CHANNEL} and takes every one that arrived; returns
     * whether there was one.
     */
    public boolean await(Duration timeout) {
        try {
            PGNotification[] arrived = notifications.getNotifications((int) Math.max(1, timeout.toMillis()));
            return arrived != null && arrived.length > 0;
        } catch (SQLException e) {
            throw new StoreException("waiting for change notifications failed", e);
        }
    }

    /**
     * Removes the rows written before {@code now - retention}, and the oldest beyond the newest {@code keep}, and raises
     * the prune mark over them; returns how many it removed.
     */
    public int prune(Instant now, Duration retention, long keep) {
        try (PreparedStatement statement = connection.prepareStatement(PRUNE)) {
            statement.setLong(1, now.minus(retention).toEpochMilli());
            statement.setLong(2, keep);
            return statement.executeUpdate();
        } catch (SQLException e) {
            throw new StoreException("pruning the change log failed", e);
        }
    }

    /**
     * The PostgreSQL server process of this connection ({@code pg_stat_activity.pid}): whom to look for, or end with
     * {@code pg_terminate_backend}, when diagnosing a follower (and in its tests).
     */
    public int backendPid() {
        return notifications.getBackendPID();
    }

    /** Whether the connection still answers (checked after a failure). */
    public boolean isValid() {
        try {
            return connection.isValid(2);
        } catch (SQLException e) {
            return false;
        }
    }

    @Override
    public void close() {
        try {
            connection.close();
        } catch (SQLException e) {
            // closing anyway
        }
    }
}
