package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import com.google.common.util.concurrent.Uninterruptibles;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.store.ReplicaLease;
import dev.sandgate.gateway.store.Store;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How one gateway replica shares a store with others ({@code PostgresStore}): its leases ({@link ReplicaLease}), on the
 * database's clock, renewed every third of their time to live.
 *
 * <ul>
 *   <li>A <b>sandbox lease</b>, taken with the sandbox's lock ({@link RequestLedger.SandboxLocks}) and held until it is
 *       released, across the driver call: one replica at a time changes a sandbox. Every sandbox write of its holder
 *       checks, in its own transaction, that the lease was not taken over ({@link FencedStore}); a replica that
 *       stalled past the time to live commits nothing with its old epoch. A replica that dies leaves its lease to
 *       expire, and the leader then finishes the intent it left pending ({@link Lifecycle#recoverOrphans}).
 *   <li>The <b>leader lease</b>: its holder runs the driver watch, the reconciliation and the expiry loop. A replica
 *       that loses it (it could not renew in time and another took it) is told to stop ({@link #lead}).
 * </ul>
 *
 * <p>{@link #single()} is the coordination of a gateway alone on its store (SQLite, held by gateway.lock): no leases.
 */
public final class ReplicaCoordination implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ReplicaCoordination.class);
    /** How long a replica waits between two attempts to take a sandbox lease another replica holds. */
    private static final long BUSY_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    private static final ReplicaCoordination SINGLE = new ReplicaCoordination();

    private final Store store;
    private final String replicaId;
    private final Duration ttl;
    private final Map<String, ReplicaLease> sandboxes = new ConcurrentHashMap<>();
    private final ScheduledExecutorService renewer;
    private final ExecutorService leaderWork;
    private volatile ReplicaLease leader;
    private volatile Runnable onLost = () -> {};
    private volatile boolean closed;

    private ReplicaCoordination() {
        this.store = null;
        this.replicaId = "single";
        this.ttl = Duration.ZERO;
        this.renewer = null;
        this.leaderWork = null;
    }

    /**
     * Coordinates through {@code store} as the replica {@code replicaId} (unique per process), with leases that live
     * {@code ttl} unless renewed.
     */
    public ReplicaCoordination(Store store, String replicaId, Duration ttl) {
        this.store = requireNonNull(store, "store is null");
        this.replicaId = requireNonNull(replicaId, "replicaId is null");
        this.ttl = requireNonNull(ttl, "ttl is null");
        if (ttl.toMillis() < 3) {
            throw new IllegalArgumentException("ttl must be at least 3 ms: " + ttl);
        }
        this.renewer = Executors.newSingleThreadScheduledExecutor(DriverCalls.daemonThreads("sandgate-replica-lease"));
        this.leaderWork = Executors.newSingleThreadExecutor(DriverCalls.daemonThreads("sandgate-leader"));
        long period = ttl.toMillis() / 3;
        var unused = renewer.scheduleWithFixedDelay(this::renewQuietly, period, period, TimeUnit.MILLISECONDS);
    }

    /** A gateway alone on its store: every lock is local, and it always leads. */
    public static ReplicaCoordination single() {
        return SINGLE;
    }

    /** A new replica id: random, one per process. */
    public static String newReplicaId() {
        byte[] random = new byte[8];
        ThreadLocalRandom.current().nextBytes(random);
        return "replica-" + HexFormat.of().formatHex(random);
    }

    public String replicaId() {
        return replicaId;
    }

    boolean isShared() {
        return store != null;
    }

    /**
     * Takes the leader lease as soon as it is free, then runs {@code onLeading} (once, on a thread of its own) and
     * after it {@code whileLeading} once every time to live for as long as it leads; runs {@code onLost} (once) if a
     * renewal finds the lease taken over. If the lease is free at once, returns only after {@code onLeading} ran (and
     * throws what it threw), as a gateway alone recovers before it serves. Without other replicas, runs
     * {@code onLeading} at once on the caller's thread and never {@code whileLeading}: nobody else leaves work behind.
     */
    public void lead(Runnable onLeading, Runnable whileLeading, Runnable onLost) {
        requireNonNull(onLeading, "onLeading is null");
        requireNonNull(whileLeading, "whileLeading is null");
        requireNonNull(onLost, "onLost is null");
        if (!isShared()) {
            onLeading.run();
            return;
        }
        this.onLost = onLost;
        Future<?> leading = tryToLead(onLeading, whileLeading);
        if (leading != null) {
            awaitUninterruptibly(leading);
        }
    }

    private static void awaitUninterruptibly(Future<?> work) {
        try {
            Uninterruptibles.getUninterruptibly(work);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new IllegalStateException(e.getCause());
        }
    }

    /** Takes the leader lease if it is free and starts onLeading, whose run it returns; else tries again later (null). */
    private Future<?> tryToLead(Runnable onLeading, Runnable whileLeading) {
        if (closed) {
            return null;
        }
        try {
            Optional<ReplicaLease> taken = store.write(tx -> tx.takeLease(ReplicaLease.LEADER, replicaId, ttl));
            if (taken.isPresent()) {
                leader = taken.get();
                log.info("replica {} leads (epoch {})", replicaId, leader.epoch());
                Future<?> leading = leaderWork.submit(() -> {
                    try {
                        onLeading.run();
                    } catch (RuntimeException e) {
                        log.error("the work of a new leader failed", e);
                        throw e;
                    }
                });
                var unused = renewer.scheduleWithFixedDelay(
                        () -> {
                            if (leader != null && !closed) {
                                leaderWork.execute(whileLeading);
                            }
                        },
                        ttl.toMillis(),
                        ttl.toMillis(),
                        TimeUnit.MILLISECONDS);
                return leading;
            }
        } catch (RuntimeException e) {
            log.warn("taking the leader lease failed: {}", e.getMessage());
        }
        var unused = renewer.schedule(
                () -> {
                    var unusedRun = tryToLead(onLeading, whileLeading);
                },
                ttl.toMillis() / 3,
                TimeUnit.MILLISECONDS);
        return null;
    }

    /** The leader lease this replica holds now, if it leads. */
    public Optional<ReplicaLease> leaderLease() {
        return Optional.ofNullable(leader);
    }

    /**
     * Takes the lease on {@code sandboxId} within {@code maxWait}, polling while another replica holds it: SANDBOX_BUSY
     * after. The caller holds the sandbox's local lock, so this replica asks for it once at a time.
     */
    void acquire(String sandboxId, Duration maxWait) {
        if (!isShared()) {
            return;
        }
        long deadline = System.nanoTime() + Math.max(0, maxWait.toNanos());
        String key = ReplicaLease.sandbox(sandboxId);
        while (true) {
            Optional<ReplicaLease> taken = store.write(tx -> tx.takeLease(key, replicaId, ttl));
            if (taken.isPresent()) {
                sandboxes.put(sandboxId, taken.get());
                return;
            }
            if (System.nanoTime() + BUSY_POLL_NANOS > deadline
                    || Thread.currentThread().isInterrupted()) {
                throw new GatewayException(
                        ErrorReason.SANDBOX_BUSY,
                        "sandbox " + sandboxId
                                + " is busy with an operation on another gateway replica that did not finish within"
                                + " the deadline");
            }
            LockSupport.parkNanos(BUSY_POLL_NANOS);
        }
    }

    /** Releases the lease on {@code sandboxId} this replica holds, if it still does. */
    void release(String sandboxId) {
        if (!isShared()) {
            return;
        }
        ReplicaLease lease = sandboxes.remove(sandboxId);
        if (lease != null && !closed) {
            try {
                store.write(tx -> {
                    tx.releaseLease(lease);
                    return null;
                });
            } catch (RuntimeException e) {
                // It expires.
                log.warn("releasing the lease on sandbox {} failed: {}", sandboxId, e.getMessage());
            }
        }
    }

    /** The lease this replica holds on {@code sandboxId}, if any: what its writes of that sandbox are fenced by. */
    Optional<ReplicaLease> heldLease(String sandboxId) {
        return Optional.ofNullable(sandboxes.get(sandboxId));
    }

    /** {@code store}, its sandbox writes fenced by this replica's sandbox leases; {@code store} itself when alone. */
    Store fence(Store store) {
        return isShared() ? new FencedStore(store, this) : store;
    }

    private void renewQuietly() {
        try {
            renew();
        } catch (RuntimeException e) {
            log.warn("renewing this replica's leases failed: {}", e.getMessage());
        }
    }

    /** Renews the leader lease and every sandbox lease held, in one transaction. */
    private void renew() {
        ReplicaLease leading = leader;
        List<ReplicaLease> held = List.copyOf(sandboxes.values());
        if (leading == null && held.isEmpty()) {
            return;
        }
        boolean stillLeading = store.write(tx -> {
            for (ReplicaLease lease : held) {
                if (!tx.renewLease(lease, ttl)) {
                    log.warn("the lease on {} was taken over by another replica", lease.key());
                }
            }
            return leading == null || tx.renewLease(leading, ttl);
        });
        if (!stillLeading && Objects.equals(leader, leading)) {
            leader = null;
            log.error("replica {} lost the leader lease (epoch {}) to another replica", replicaId, leading.epoch());
            onLost.run();
        }
    }

    /**
     * Stops renewing and gives the leader lease up, so that another replica leads at once; sandbox leases still held
     * are left to expire (a replica that stops mid-call is, to the others, a replica that died).
     */
    @Override
    public void close() {
        if (!isShared()) {
            return;
        }
        closed = true;
        renewer.shutdownNow();
        leaderWork.shutdownNow();
        ReplicaLease leading = leader;
        leader = null;
        if (leading != null) {
            try {
                store.write(tx -> {
                    tx.releaseLease(leading);
                    return null;
                });
            } catch (RuntimeException e) {
                log.warn("releasing the leader lease failed; it expires: {}", e.getMessage());
            }
        }
    }
}
