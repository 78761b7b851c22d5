package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.store.ConditionRecord;
import dev.sandgate.gateway.store.DueLease;
import dev.sandgate.gateway.store.ExpiryRecord;
import dev.sandgate.gateway.store.LeaseRecord;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.gateway.token.ExecutionTokens;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The expiry loop: acts on execution leases whose deadline has passed, through the normal lifecycle path.
 *
 * <p>One timer thread wakes at the earliest due lease (read through the store's index on the due time, never a scan of
 * every sandbox), and earlier when a committed change carries an earlier one. A due lease of execution G becomes a
 * {@link Lifecycle#stop} (or {@link Lifecycle#delete}, per the sandbox's {@link ExpiryRecord.Action}) conditional on
 * G, through an execution token the gateway mints for G: a lease of an older execution is STALE_EXECUTION there and
 * never stops a newer one. Its request id is derived from (sandbox id, G, "expiry"), so that after a crash the same
 * expiry replays through the request ledger instead of running again. Once the operation has an answer, the lease is
 * disarmed (and, for a stop the expiry made, an {@link ConditionRecord#EXPIRED} condition recorded) in one more
 * write; a crash before that write makes the next gateway replay the operation and then write it.
 *
 * <p>Actions run on a small pool, at most one per lease at a time; a transient failure (busy sandbox, unavailable
 * driver, pending transition) is retried after {@link #RETRY_AFTER}.
 */
final class Expiry implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Expiry.class);

    /** The principal the gateway's own expiry requests are recorded under (no client principal has this form). */
    static final String PRINCIPAL = "sandgate:expiry";

    /** How many of the earliest leases one wake-up reads. */
    static final int BATCH = 256;

    /** The longest sleep, so that a clock that jumps is noticed. */
    static final Duration MAX_SLEEP = Duration.ofMinutes(1);

    /** The pause before an expiry that failed transiently is tried again. */
    static final Duration RETRY_AFTER = Duration.ofSeconds(2);

    private static final int WORKERS = 2;

    private final Store store;
    private final Lifecycle lifecycle;
    private final RequestLedger.SandboxLocks locks;
    private final ExecutionTokens tokens;
    private final WatchHub hub;
    private final Clock clock;
    private final Duration actionWait;
    private final ScheduledExecutorService timer;
    private final ExecutorService workers;
    private final Set<String> inFlight = ConcurrentHashMap.newKeySet();
    private final Map<String, Instant> retryAt = new ConcurrentHashMap<>();
    private WatchHub.Registration registration;
    private ScheduledFuture<?> wake;
    private Instant wakeAt;
    private boolean closed;

    /**
     * @param actionWait how long an expiry's stop or delete waits (for a busy sandbox, for the driver) before it is
     *     left to be retried
     */
    Expiry(
            Store store,
            Lifecycle lifecycle,
            RequestLedger.SandboxLocks locks,
            ExecutionTokens tokens,
            WatchHub hub,
            Clock clock,
            Duration actionWait) {
        this.store = requireNonNull(store, "store is null");
        this.lifecycle = requireNonNull(lifecycle, "lifecycle is null");
        this.locks = requireNonNull(locks, "locks is null");
        this.tokens = requireNonNull(tokens, "tokens is null");
        this.hub = requireNonNull(hub, "hub is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.actionWait = requireNonNull(actionWait, "actionWait is null");
        this.timer = Executors.newSingleThreadScheduledExecutor(daemon("sandgate-expiry"));
        this.workers = Executors.newFixedThreadPool(WORKERS, daemon("sandgate-expiry-action"));
    }

    private static java.util.concurrent.ThreadFactory daemon(String name) {
        return Thread.ofPlatform().name(name + "-", 0).daemon().factory();
    }

    /** Starts watching committed changes for earlier deadlines and acts on every lease already due. */
    synchronized void start() {
        registration = hub.register(
                change -> change.sandbox().lease().flatMap(LeaseRecord::due).ifPresent(this::wakeBy));
        wakeBy(Instant.EPOCH);
    }

    /**
     * Scans the due leases now: for the leases other gateway replicas armed, whose changes this replica's hub does not
     * carry.
     */
    void rescan() {
        wakeBy(Instant.EPOCH);
    }

    /** The deterministic request id of the expiry of execution {@code generation} of sandbox {@code sandboxId}. */
    static String requestId(String sandboxId, long generation) {
        return UUID.nameUUIDFromBytes((sandboxId + "/" + generation + "/expiry").getBytes(StandardCharsets.UTF_8))
                .toString();
    }

    /** Makes the loop wake no later than {@code due}. */
    private synchronized void wakeBy(Instant due) {
        if (closed || (wakeAt != null && !due.isBefore(wakeAt))) {
            return;
        }
        if (wake != null) {
            wake.cancel(false);
        }
        wakeAt = due;
        long delayMillis = Math.max(0, Duration.between(clock.instant(), due).toMillis());
        wake = timer.schedule(this::scan, delayMillis, TimeUnit.MILLISECONDS);
    }

    private void scan() {
        synchronized (this) {
            wakeAt = null;
            wake = null;
        }
        Instant next;
        try {
            next = dispatchDue();
        } catch (RuntimeException e) {
            log.warn("expiry: reading the due leases failed; trying again in {}", RETRY_AFTER, e);
            next = clock.instant().plus(RETRY_AFTER);
        }
        wakeBy(next);
    }

    /** Hands every due lease to a worker; returns when to look again. */
    private Instant dispatchDue() {
        Instant now = clock.instant();
        Instant next = now.plus(MAX_SLEEP);
        List<DueLease> leases = store.read(tx -> tx.leasesByDue(BATCH));
        if (leases.size() < BATCH) {
            // every armed lease was read: retries of leases no longer armed are forgotten
            Set<String> armed = new java.util.HashSet<>();
            leases.forEach(l -> armed.add(l.sandboxId() + "/" + l.generation()));
            retryAt.keySet().retainAll(armed);
        }
        for (DueLease lease : leases) {
            if (lease.due().isAfter(now)) {
                return lease.due().isBefore(next) ? lease.due() : next;
            }
            String key = lease.sandboxId() + "/" + lease.generation();
            Instant retry = retryAt.get(key);
            if (retry != null && retry.isAfter(now)) {
                next = retry.isBefore(next) ? retry : next;
                continue;
            }
            if (inFlight.add(key)) {
                retryAt.remove(key);
                workers.execute(() -> expire(lease, key));
            }
        }
        return next;
    }

    private void expire(DueLease due, String key) {
        String id = due.sandboxId();
        long generation = due.generation();
        try {
            Optional<SandboxRecord> current = store.sandbox(id);
            Optional<LeaseRecord> lease = current.flatMap(SandboxRecord::lease);
            if (lease.isEmpty()
                    || lease.get().generation() != generation
                    || !lease.get().armed()) {
                return; // deleted, restarted or already handled since the read
            }
            act(
                    id,
                    generation,
                    lease.get().dueDeadline(),
                    current.get().expiry().orElseThrow().action());
        } catch (GatewayException e) {
            if (RequestLedger.recordable(e.reason())) {
                // A definitive answer (a newer execution, a sandbox gone, a driver's refusal): nothing to retry.
                log.info("expiry sandbox={} generation={} outcome={} (nothing expired)", id, generation, e.reason());
                disarmQuietly(id, generation);
            } else {
                log.debug(
                        "expiry sandbox={} generation={} postponed: {} (retry in {})",
                        id,
                        generation,
                        e.reason(),
                        RETRY_AFTER);
                retryAt.put(key, clock.instant().plus(RETRY_AFTER));
            }
        } catch (RuntimeException e) {
            log.warn("expiry sandbox={} generation={} failed; retry in {}", id, generation, RETRY_AFTER, e);
            retryAt.put(key, clock.instant().plus(RETRY_AFTER));
        } finally {
            inFlight.remove(key);
            wakeBy(clock.instant());
        }
    }

    /**
     * Expires execution {@code generation} of sandbox {@code id}: the stop or delete conditional on that generation,
     * under the expiry's deterministic request id (a repeat replays the first answer), then the lease disarmed. Throws
     * what the operation throws (STALE_EXECUTION when a newer execution is current: nothing is stopped).
     */
    MutationReply act(String id, long generation, String deadline, ExpiryRecord.Action action) {
        Commands.RequestMeta meta = new Commands.RequestMeta(
                Optional.of(requestId(id, generation)), "expiry:" + action + ":" + id + ":" + generation, PRINCIPAL);
        Optional<Commands.Precondition> precondition =
                Optional.of(new Commands.Precondition(Optional.of(id), Optional.of(tokens.mint(id, generation))));
        Commands.Target target = Commands.Target.byId(id);
        MutationReply reply = switch (action) {
            case STOP -> {
                MutationReply stop = lifecycle.stop(new Commands.Stop(meta, target, precondition), actionWait);
                boolean stopped = stop.outcome() == Outcome.STOPPED_NOW;
                disarm(id, generation, stopped ? Optional.of(deadline) : Optional.empty());
                yield stop;
            }
            case DELETE -> lifecycle.delete(new Commands.Delete(meta, target, precondition, true), actionWait);
        };
        log.info(
                "expiry sandbox={} generation={} deadline={} action={} outcome={}{}",
                id,
                generation,
                deadline,
                action,
                reply.outcome(),
                reply.replayed() ? " (replayed)" : "");
        return reply;
    }

    private void disarmQuietly(String id, long generation) {
        try {
            disarm(id, generation, Optional.empty());
        } catch (RuntimeException e) {
            log.warn("expiry sandbox={} generation={}: disarming the lease failed", id, generation, e);
        }
    }

    /**
     * Marks the lease of {@code generation} as acted on, if it is still the sandbox's lease, with an EXPIRED condition
     * naming {@code deadline} when the expiry stopped the execution.
     */
    private void disarm(String id, long generation, Optional<String> deadline) {
        SandboxRecord written;
        try (RequestLedger.SandboxLocks.Held held = locks.acquire(id, actionWait)) {
            Instant now = Transitions.now(clock);
            written = store.write(tx -> {
                Optional<SandboxRecord> row = tx.sandbox(id);
                Optional<LeaseRecord> lease = row.flatMap(SandboxRecord::lease);
                if (lease.isEmpty()
                        || lease.get().generation() != generation
                        || !lease.get().armed()) {
                    return null;
                }
                SandboxRecord.Builder b =
                        row.get().toBuilder().lease(lease.get().disarmed()).updateTime(now);
                deadline.ifPresent(which -> b.condition(new ConditionRecord(
                        ConditionRecord.EXPIRED,
                        "generation " + generation + " was stopped by the gateway: its " + which + " deadline "
                                + ("ttl".equals(which)
                                                ? lease.get().ttlDeadline()
                                                : lease.get().idleDeadline())
                                        .orElseThrow()
                                + " passed",
                        now)));
                return tx.updateSandbox(b.build());
            });
        }
        if (written != null) {
            hub.publish(new SandboxChange(
                    SandboxChange.Type.MODIFIED, written, Transitions.currentObservation(written), true));
        }
    }

    /** Stops the loop; an expiry in progress finishes its current step. Leases stay in the store for the next start. */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            if (wake != null) {
                wake.cancel(false);
            }
            if (registration != null) {
                registration.close();
            }
        }
        timer.shutdownNow();
        workers.shutdownNow();
    }
}
