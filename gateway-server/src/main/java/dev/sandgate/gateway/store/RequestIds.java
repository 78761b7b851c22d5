package dev.sandgate.gateway.store;

import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnels;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Which request ids the request table may hold, so that looking up the id of a new request (every mutating call
 * carries one, and nearly all are new) needs no read of the database. A Bloom filter: "absent" is certain, "maybe" is
 * wrong about once in a hundred times and then reads the database.
 *
 * <p>The writer adds every id it inserts before the transaction commits, so an id that is committed is never reported
 * absent. Ids pruned from the table stay in the filter; once more ids were added than it was sized for, the writer
 * builds it again from the table, between transactions and holding the write lock, so no insert is missed.
 */
final class RequestIds {
    /** The fewest ids a filter is sized for (about 80 KiB at 1 % false positives). */
    static final long MIN_EXPECTED = 1 << 16;

    private static final double FALSE_POSITIVES = 0.01;

    private record Sized(BloomFilter<CharSequence> filter, long expected, AtomicLong added) {}

    private final long minExpected;
    private volatile Sized current;
    private long rebuilds;

    RequestIds(long minExpected) {
        this.minExpected = minExpected;
        this.current = sized(minExpected);
    }

    /** False if the table certainly holds no request with this id. */
    boolean mightHold(String requestId) {
        return current.filter().mightContain(requestId);
    }

    /** Called by the writer before it inserts {@code requestId}. */
    void adding(String requestId) {
        Sized sized = current;
        sized.filter().put(requestId);
        sized.added().incrementAndGet();
    }

    /** Whether more ids were added than the filter was sized for. */
    boolean full() {
        Sized sized = current;
        return sized.added().get() > sized.expected();
    }

    /**
     * Builds the filter from every id in the table, read through {@code connection}. The caller holds the write lock,
     * so nothing is inserted meanwhile, and ends the read transaction afterwards.
     */
    void rebuild(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            long count;
            try (ResultSet rs = statement.executeQuery("SELECT count(*) FROM request")) {
                rs.next();
                count = rs.getLong(1);
            }
            Sized fresh = sized(Math.max(minExpected, 2 * count));
            try (ResultSet rs = statement.executeQuery("SELECT request_id FROM request")) {
                while (rs.next()) {
                    fresh.filter().put(rs.getString(1));
                    fresh.added().incrementAndGet();
                }
            }
            current = fresh;
            rebuilds++;
        }
    }

    /** After a failed rebuild: the filter is full again only once as many ids again were added. */
    void postpone() {
        current.added().set(0);
    }

    /** How many times the filter was built from the table (for tests). */
    long rebuilds() {
        return rebuilds;
    }

    private static Sized sized(long expected) {
        return new Sized(
                BloomFilter.create(Funnels.stringFunnel(StandardCharsets.UTF_8), expected, FALSE_POSITIVES),
                expected,
                new AtomicLong());
    }
}
