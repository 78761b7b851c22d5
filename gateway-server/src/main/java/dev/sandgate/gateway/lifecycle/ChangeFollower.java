package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.metrics.GatewayObserver;
import dev.sandgate.gateway.store.ChangeLog;
import dev.sandgate.gateway.store.SandboxRecord;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Streams every replica's sandbox changes to this replica's {@link WatchHub}, from the change log on PostgreSQL
 * ({@link ChangeLog}): one thread ({@code sandgate-change-follower}) on a connection of its own that listens for the
 * log's notifications, wakes on one or every {@link #POLL}, and delivers the rows after its position in sequence order.
 *
 * <ul>
 *   <li><b>Holes.</b> A row's sequence number is taken before its transaction commits, so a row may show up after rows
 *       with larger numbers. The follower holds its delivery at a missing number until the row arrives, or until every
 *       transaction that was running when the hole was seen has ended (a later read's snapshot shows it) and the row is
 *       still missing: it never will be (its transaction rolled back). As a last resort it passes a hole held for
 *       {@link #HOLE_CAP}, with a warning; that is the cap's known cost: a row its transaction commits after that is
 *       never delivered (the sandbox's next change is). Both are counted ({@link
 *       GatewayObserver#watchLogHolesSkipped}).
 *   <li><b>Start.</b> It starts at the newest row: its replica's watch streams, opened later, begin with a snapshot of
 *       the store. It first waits (up to {@link #HOLE_CAP}) for the transactions running when it read that row to end,
 *       so that a change with a smaller number, committed after, is in those snapshots.
 *   <li><b>Falling behind.</b> The leader prunes rows older than {@link #RETENTION} (and beyond the newest {@link
 *       #KEEP}). A follower whose position was pruned may have missed changes: it tells the hub ({@link
 *       WatchHub#missed}), whose watch streams end with WATCH_OVERFLOW so that their clients watch again, and goes on
 *       from the pruning mark. After a lost connection it reconnects with backoff and catches up from its position,
 *       which proves it missed nothing unless the position was pruned meanwhile.
 * </ul>
 */
public final class ChangeFollower implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ChangeFollower.class);

    /** How long the follower waits for a notification before it reads the log anyway. */
    static final Duration POLL = Duration.ofSeconds(1);
    /** How often it reads again while it holds at a hole. */
    static final Duration HOLE_POLL = Duration.ofMillis(20);
    /** The longest it holds at one hole whose transactions have not all ended. */
    static final Duration HOLE_CAP = Duration.ofSeconds(5);
    /** How long the log keeps a change: how far a replica may fall behind before its watch streams overflow. */
    static final Duration RETENTION = Duration.ofMinutes(5);
    /** The most rows the log keeps, whatever their age. */
    static final long KEEP = 200_000;
    /** How often the leader prunes the log. */
    static final Duration PRUNE_EVERY = Duration.ofSeconds(30);

    private static final int PAGE = 500;

    private static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

    private final Supplier<ChangeLog> connect;
    private final WatchHub hub;
    private final BooleanSupplier leading;
    private final Supplier<GatewayObserver> observer;
    /** {@link #HOLE_CAP}, shorter in tests. */
    private final Duration holeCap;

    private final Thread thread;
    private volatile boolean closed;
    /** The hole delivery waits at, 0 when none; for tests. */
    private volatile long holdingAt;
    /** How many times the log was read; for tests. */
    private final AtomicLong reads = new AtomicLong();

    // Owned by the follower's thread (and the constructor, before the thread starts).
    private ChangeLog changes;
    private long position;
    /** The snapshot in which the holes up to holeBound were seen; null when no hole is held. */
    private ChangeLog.Snapshot holeSnapshot;

    private long holeBound;
    private long heldSince;
    private long lastPrune = System.nanoTime();

    /**
     * Opens the log (through {@code connect}), takes its start position, makes {@code hub} follow the log and starts
     * the thread. Throws the store's exception if the log cannot be opened.
     *
     * @param leading whether this replica leads now (the leader prunes the log)
     */
    public ChangeFollower(
            Supplier<ChangeLog> connect, WatchHub hub, BooleanSupplier leading, Supplier<GatewayObserver> observer) {
        this(connect, hub, leading, observer, HOLE_CAP);
    }

    /** As the public constructor, with {@code holeCap} in place of {@link #HOLE_CAP} (a test's shorter one). */
    ChangeFollower(
            Supplier<ChangeLog> connect,
            WatchHub hub,
            BooleanSupplier leading,
            Supplier<GatewayObserver> observer,
            Duration holeCap) {
        this.connect = requireNonNull(connect, "connect is null");
        this.hub = requireNonNull(hub, "hub is null");
        this.leading = requireNonNull(leading, "leading is null");
        this.observer = requireNonNull(observer, "observer is null");
        this.holeCap = requireNonNull(holeCap, "holeCap is null");
        this.changes = connect.get();
        try {
            this.position = startPosition(changes, holeCap);
        } catch (RuntimeException e) {
            changes.close();
            throw e;
        }
        hub.followLog();
        this.thread =
                Thread.ofPlatform().name("sandgate-change-follower").daemon().unstarted(this::run);
        thread.start();
    }

    /**
     * The newest row's position, once every transaction that was running when it was read has ended (or after {@link
     * #HOLE_CAP}): a row with a smaller number can only be committed by one of those.
     */
    private static long startPosition(ChangeLog changes, Duration holeCap) {
        ChangeLog.Newest newest = changes.newest();
        long deadline = System.nanoTime() + holeCap.toNanos();
        while (!newest.snapshot().allEndedBy(changes.newest().snapshot())) {
            if (System.nanoTime() > deadline) {
                log.warn(
                        "change log: transactions still ran {} ms after the start; a change may be missing from watch"
                                + " streams",
                        holeCap.toMillis());
                break;
            }
            LockSupport.parkNanos(HOLE_POLL.toNanos());
        }
        return newest.sequence();
    }

    /** The missing sequence number delivery holds at, if any. */
    OptionalLong holdingAt() {
        long at = holdingAt;
        return at == 0 ? OptionalLong.empty() : OptionalLong.of(at);
    }

    private void run() {
        Duration backoff = Duration.ofMillis(100);
        while (!closed) {
            try {
                if (changes == null) {
                    changes = connect.get();
                    log.info("change log: reconnected; catching up from position {}", position);
                }
                boolean more = step();
                backoff = Duration.ofMillis(100);
                pruneIfLeading();
                if (!more) {
                    changes.await(holeSnapshot != null ? HOLE_POLL : POLL);
                }
            } catch (RuntimeException e) {
                if (closed) {
                    break;
                }
                log.warn("change log: {}; reconnecting in {} ms", e.getMessage(), backoff.toMillis());
                if (changes != null) {
                    changes.close();
                    changes = null;
                }
                LockSupport.parkNanos(backoff.toNanos());
                backoff = backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : backoff.multipliedBy(2);
            }
        }
        if (changes != null) {
            changes.close();
            changes = null;
        }
    }

    /** How many times the follower has read the log. */
    long reads() {
        return reads.get();
    }

    /** Reads once after the position and delivers what it may; returns whether there may be more to read at once. */
    private boolean step() {
        ChangeLog.Page page = changes.after(position, PAGE);
        reads.incrementAndGet();
        if (page.prunedThrough() > position) {
            log.warn(
                    "change log: this replica fell behind the log's pruning (position {}, pruned through {}): its"
                            + " watch streams end with WATCH_OVERFLOW",
                    position,
                    page.prunedThrough());
            observer.get().watchLogMissed();
            hub.missed();
            position = page.prunedThrough();
            clearHole();
            return true;
        }
        List<ChangeLog.Entry> entries = page.entries();
        for (ChangeLog.Entry entry : entries) {
            if (entry.sequence() <= position) {
                continue;
            }
            if (entry.sequence() > position + 1 && !passHole(entry.sequence(), page)) {
                return false;
            }
            deliver(entry);
            position = entry.sequence();
            if (position >= holdingAt) {
                holdingAt = 0;
            }
            if (holeSnapshot != null && position >= holeBound) {
                clearHole();
            }
        }
        if (holeSnapshot == null) {
            holdingAt = 0;
        }
        return entries.size() == PAGE;
    }

    /**
     * Delivery reached a hole before {@code next}: returns whether to pass over it (moving the position to just before
     * {@code next}), or false to hold.
     */
    private boolean passHole(long next, ChangeLog.Page page) {
        long hole = position + 1;
        if (holeSnapshot != null && hole <= holeBound && holeSnapshot.allEndedBy(page.snapshot())) {
            // Every transaction that could fill a hole up to holeBound ended before this read, which still misses it.
            long through = Math.min(next - 1, holeBound);
            observer.get().watchLogHolesSkipped(through - position, false);
            log.debug("change log: sequence numbers {} to {} will never be filled; passed", hole, through);
            position = through;
            if (position + 1 == next) {
                return true;
            }
            hole = position + 1;
        }
        if (holeSnapshot == null || hole > holeBound) {
            // The snapshot of this read covers every hole up to its newest row.
            holeSnapshot = page.snapshot();
            holeBound = page.entries().getLast().sequence();
        }
        if (holdingAt != hole) {
            holdingAt = hole;
            heldSince = System.nanoTime();
            return false;
        }
        if (System.nanoTime() - heldSince < holeCap.toNanos()) {
            return false;
        }
        log.warn(
                "change log: sequence numbers {} to {} stayed missing for {} ms while their transactions ran; passed"
                        + " (a change may be missing from watch streams)",
                hole,
                next - 1,
                holeCap.toMillis());
        observer.get().watchLogHolesSkipped(next - hole, true);
        position = next - 1;
        return true;
    }

    private void clearHole() {
        holeSnapshot = null;
        holeBound = 0;
        holdingAt = 0;
    }

    private void deliver(ChangeLog.Entry entry) {
        SandboxRecord sandbox = entry.sandbox();
        SandboxChange change = switch (entry.kind()) {
            case ADDED ->
                new SandboxChange(SandboxChange.Type.ADDED, sandbox, Transitions.currentObservation(sandbox), true);
            case MODIFIED ->
                new SandboxChange(SandboxChange.Type.MODIFIED, sandbox, Transitions.currentObservation(sandbox), true);
            case REMOVED ->
                new SandboxChange(
                        SandboxChange.Type.REMOVED,
                        sandbox.toBuilder().updateTime(entry.time()).build(),
                        new Observation(sandbox.runtimeGeneration(), "DELETED", "", entry.time(), ""),
                        true);
        };
        if (log.isTraceEnabled()) {
            log.trace(
                    "change log: deliver seq={} {} sandbox={} version={}",
                    entry.sequence(),
                    entry.kind(),
                    sandbox.id(),
                    sandbox.resourceVersion());
        }
        hub.deliver(change);
    }

    private void pruneIfLeading() {
        if (System.nanoTime() - lastPrune < PRUNE_EVERY.toNanos()) {
            return;
        }
        lastPrune = System.nanoTime();
        if (leading.getAsBoolean()) {
            int removed = changes.prune(Instant.now(), RETENTION, KEEP);
            if (removed > 0) {
                log.debug("change log: pruned {} rows", removed);
            }
        }
    }

    /** Ends the thread (within one wait for notifications) and closes its connection. */
    @Override
    public void close() {
        closed = true;
        thread.interrupt();
        try {
            thread.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
