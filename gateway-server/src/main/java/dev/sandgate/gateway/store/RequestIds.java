package dev.sandgate.gateway.store;

import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnels;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which request ids the request table may hold, so that looking up the id of a new request (every mutating call
 * carries one, and nearly all are new) needs no read of the database. A Bloom filter: "absent" is certain, "maybe" is
 * wrong about once in a hundred times and then reads the database.
 *
 * <p>The writer adds every id it inserts before the transaction commits, so an id that is committed is never reported
 * absent. Ids pruned from the table stay in the filter; once more ids were added than it was sized for, a new filter
 * is built from the table without stopping the writer:
 *
 * <ol>
 *   <li>the writer, between transactions, starts a scan on a connection of its own and from then on also notes every
 *       id it adds;
 *   <li>the scan reads every id in one snapshot, which begins after that point and so holds every id committed before
 *       it (every id noted is committed after it, or never);
 *   <li>the writer, between transactions once the scan is done, adds the ids it noted to the new filter and puts it in
 *       place of the old one.
 * </ol>
 *
 * The old filter answers meanwhile; it holds every id too. A scan that fails leaves it in place.
 */
final class RequestIds implements AutoCloseable {
    /** The fewest ids a filter is sized for (about 80 KiB at 1 % false positives). */
    static final long MIN_EXPECTED = 1 << 16;

    private static final Logger log = LoggerFactory.getLogger(RequestIds.class);
    private static final double FALSE_POSITIVES = 0.01;

    /** Opens a connection for a scan, outside any transaction, with auto-commit off. */
    @FunctionalInterface
    interface Connections {
        Connection open() throws SQLException;
    }

    /** Runs in a scan once its snapshot has begun (tests hold the scan there). */
    @FunctionalInterface
    interface ScanHook {
        void snapshotBegun() throws InterruptedException;
    }

    private record Sized(BloomFilter<CharSequence> filter, long expected, AtomicLong added) {
        void put(String requestId) {
            filter.put(requestId);
            added.incrementAndGet();
        }
    }

    /** What a scan ended with: the filter it built, or why it failed. */
    private record Scanned(Sized filter, Exception failure) {}

    private final long minExpected;
    private final Connections connections;
    private final ScanHook hook;
    private final ExecutorService scans;
    private volatile Sized current;
    /** The ids added since the running scan began, or null with no scan running; only the writer uses it. */
    private List<String> sinceScan;
    /** Set by the scan when it ends, taken by the writer. */
    private volatile Scanned scanned;

    private final AtomicLong rebuilds = new AtomicLong();

    RequestIds(long minExpected, Connections connections, ScanHook hook) {
        this.minExpected = minExpected;
        this.connections = connections;
        this.hook = hook;
        this.current = sized(minExpected);
        this.scans = Executors.newSingleThreadExecutor(
                Thread.ofPlatform().name("sandgate-request-ids").daemon().factory());
    }

    /** A filter that is never rebuilt (for tests of the filter alone). */
    RequestIds(long minExpected) {
        this(
                minExpected,
                () -> {
                    throw new SQLException("no table to scan");
                },
                () -> {});
    }

    /** False if the table certainly holds no request with this id. */
    boolean mightHold(String requestId) {
        return current.filter().mightContain(requestId);
    }

    /** Called by the writer before it inserts {@code requestId}. */
    void adding(String requestId) {
        current.put(requestId);
        if (sinceScan != null) {
            sinceScan.add(requestId);
        }
    }

    /** Builds the filter from the table before the store takes writes, reading through {@code connection}. */
    void build(Connection connection) throws SQLException, InterruptedException {
        current = scan(connection, () -> {});
    }

    /**
     * Called by the writer between transactions: puts a finished scan's filter in place, or starts a scan if the
     * filter holds more ids than it was sized for.
     */
    void betweenTransactions() {
        if (sinceScan != null) {
            Scanned done = scanned;
            if (done == null) {
                return;
            }
            scanned = null;
            List<String> noted = sinceScan;
            sinceScan = null;
            if (done.failure() != null) {
                log.warn(
                        "cannot rebuild the filter of request ids; keeping the old one: {}",
                        done.failure().toString());
                // Full again only once as many ids again were added.
                current.added().set(0);
                return;
            }
            Sized fresh = done.filter();
            noted.forEach(fresh::put);
            current = fresh;
            rebuilds.incrementAndGet();
            return;
        }
        Sized sized = current;
        if (sized.added().get() <= sized.expected()) {
            return;
        }
        sinceScan = new ArrayList<>();
        try {
            scans.execute(this::scanInBackground);
        } catch (RejectedExecutionException e) {
            sinceScan = null; // closed
        }
    }

    private void scanInBackground() {
        Scanned result;
        try (Connection connection = connections.open()) {
            try {
                result = new Scanned(scan(connection, hook), null);
            } finally {
                connection.rollback();
            }
        } catch (SQLException | RuntimeException | InterruptedException e) {
            result = new Scanned(null, e);
        }
        scanned = result;
    }

    /** Every id in one read transaction of {@code connection}, which the caller ends. */
    private Sized scan(Connection connection, ScanHook hook) throws SQLException, InterruptedException {
        try (Statement statement = connection.createStatement()) {
            long count;
            // The snapshot begins with this first read.
            try (ResultSet rs = statement.executeQuery("SELECT count(*) FROM request")) {
                rs.next();
                count = rs.getLong(1);
            }
            hook.snapshotBegun();
            Sized fresh = sized(Math.max(minExpected, 2 * count));
            try (ResultSet rs = statement.executeQuery("SELECT request_id FROM request")) {
                for (long row = 1; rs.next(); row++) {
                    fresh.put(rs.getString(1));
                    if (row % 4096 == 0 && Thread.interrupted()) {
                        throw new InterruptedException("the store is closing");
                    }
                }
            }
            return fresh;
        }
    }

    /** How many times a filter built from the table was put in place after the first (for tests). */
    long rebuilds() {
        return rebuilds.get();
    }

    /** Stops a running scan; the store closes its connections after this. */
    @Override
    public void close() {
        scans.shutdownNow();
        try {
            if (!scans.awaitTermination(10, TimeUnit.SECONDS)) {
                log.warn("the scan of request ids did not stop within 10 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static Sized sized(long expected) {
        return new Sized(
                BloomFilter.create(Funnels.stringFunnel(StandardCharsets.UTF_8), expected, FALSE_POSITIVES),
                expected,
                new AtomicLong());
    }
}
