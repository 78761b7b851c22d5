package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.metrics.GatewayObserver;
import dev.sandgate.gateway.store.ConditionRecord;
import dev.sandgate.gateway.store.PendingTransition;
import dev.sandgate.gateway.store.RuntimeState;
import dev.sandgate.gateway.store.SandboxPhase;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.gateway.store.StoreTransaction;
import dev.sandgate.gateway.store.StoreTransaction.SandboxKey;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.WatchSubscription;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the store in step with the driver, in the background: completes transitions left pending (at start-up, and
 * by retries after a driver was unavailable), applies the driver's events fenced by sandbox id, generation and pending
 * transitions (the snapshot that starts every subscription reconciles the store: a sandbox the snapshot lacks is
 * marked missing, a resource the store lacks is reported unmanaged), and prunes aged request records.
 */
final class Reconciler implements AutoCloseable {
    /** Under the lifecycle's name: operators filter on it (docs/operations.md, "Logs"). */
    private static final Logger log = LoggerFactory.getLogger(Lifecycle.class);

    private static final int RECONCILE_PAGE = 500;
    /** At most this many unmanaged resources are kept and logged per snapshot. */
    private static final int MAX_UNMANAGED_REPORTED = 1_000;

    private final Store store;
    private final ComputeDriver driver;
    private final RequestLedger.SandboxLocks locks;
    private final Transitions transitions;
    private final RequestLedger ledger;
    private final WatchHub hub;
    private final Clock clock;
    private final LifecycleSettings settings;
    private final Supplier<GatewayObserver> observer;
    private final ScheduledExecutorService scheduler;
    private final ConcurrentHashMap<String, Integer> retryAttempts = new ConcurrentHashMap<>();
    private volatile List<SandboxObservation> unmanaged = List.of();
    private volatile WatchSubscription driverWatch;
    private volatile boolean closed;

    Reconciler(
            Store store,
            ComputeDriver driver,
            RequestLedger.SandboxLocks locks,
            Transitions transitions,
            RequestLedger ledger,
            WatchHub hub,
            Clock clock,
            LifecycleSettings settings,
            Supplier<GatewayObserver> observer) {
        this.store = requireNonNull(store, "store is null");
        this.driver = requireNonNull(driver, "driver is null");
        this.locks = requireNonNull(locks, "locks is null");
        this.transitions = requireNonNull(transitions, "transitions is null");
        this.ledger = requireNonNull(ledger, "ledger is null");
        this.hub = requireNonNull(hub, "hub is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.settings = requireNonNull(settings, "settings is null");
        this.observer = requireNonNull(observer, "observer is null");
        this.scheduler = Executors.newSingleThreadScheduledExecutor(DriverCalls.daemonThreads("sandgate-lifecycle"));
        Duration pruneEvery = min(settings.requestRetention().dividedBy(4), Duration.ofMinutes(10));
        var unused = scheduler.scheduleWithFixedDelay(
                this::pruneRequestsQuietly, pruneEvery.toMillis(), pruneEvery.toMillis(), TimeUnit.MILLISECONDS);
    }

    /**
     * Runtime resources stamped with this gateway's id for which the store has no record, as the last complete
     * snapshot of the driver's watch found them (empty until the first snapshot is complete).
     */
    List<SandboxObservation> unmanagedResources() {
        return unmanaged;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Recovery and retries of pending intents

    /**
     * Completes every transition left pending (by a crash or a timed-out driver call) with its committed input, then
     * subscribes to the driver's events, whose snapshot reconciles the store in the background.
     */
    void recover() {
        List<SandboxRecord> pending = store.read(StoreTransaction::pendingSandboxes);
        for (SandboxRecord row : pending) {
            PendingTransition transition = row.pending().orElseThrow();
            log.info(
                    "recovery sandbox={} op={} generation={} operation={}",
                    row.id(),
                    transition.kind().name().toLowerCase(Locale.ROOT),
                    row.generation(),
                    transition.operationId());
            observer.get().recovery();
            try (RequestLedger.SandboxLocks.Held held = locks.acquire(row.id(), settings.defaultWait())) {
                // Finishing a delete removes the sandbox: that is its completion, not a failure to look it up after.
                store.sandbox(row.id())
                        .filter(r -> r.pending().isPresent())
                        .ifPresent(r -> transitions.finishPending(r, background()));
            } catch (GatewayException e) {
                log.warn("recovery of sandbox {} did not complete: {}", row.id(), e.getMessage());
            }
        }
        // The driver's watch starts with a snapshot of every resource, then SYNCED: that is the reconciliation. It
        // runs on the driver's event thread, so start-up does not wait for the driver to read every resource.
        watchDriver();
    }

    /** Completes the transition pending on {@code sandboxId} later, backing off while the driver stays unavailable. */
    void retryLater(String sandboxId) {
        if (closed) {
            return;
        }
        observer.get().retry();
        int attempt = retryAttempts.merge(sandboxId, 1, Integer::sum);
        long delayMillis = Math.min(settings.maxRetryBackoff().toMillis(), 500L << Math.min(attempt, 16));
        var unused = scheduler.schedule(
                () -> {
                    try (RequestLedger.SandboxLocks.Held held = locks.acquire(sandboxId, settings.defaultWait())) {
                        transitions.completePending(sandboxId, Commands.Target.byId(sandboxId), background());
                        retryAttempts.remove(sandboxId);
                    } catch (GatewayException e) {
                        if (e.reason() == ErrorReason.SANDBOX_NOT_FOUND) {
                            retryAttempts.remove(sandboxId);
                        } else if (e.reason() == ErrorReason.SANDBOX_BUSY) {
                            retryLater(sandboxId);
                        }
                    } catch (RuntimeException e) {
                        if (closed) {
                            // Closing interrupts a retry under way and closes the store under it: the next start-up's
                            // recovery completes the transition, so this is no failure to warn of.
                            log.debug("retrying the pending transition of sandbox {} stopped by close", sandboxId);
                            return;
                        }
                        log.warn("retrying the pending transition of sandbox {} failed", sandboxId, e);
                        retryLater(sandboxId);
                    }
                },
                delayMillis,
                TimeUnit.MILLISECONDS);
    }

    /** The deadline of work nobody waits for: its driver calls run on driver-call threads. */
    private CallDeadline background() {
        return CallDeadline.waiting(settings.defaultWait());
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Reconciliation and driver events

    private void watchDriver() {
        if (closed) {
            return;
        }
        try {
            driverWatch = driver.watch(new DriverEvents());
        } catch (RuntimeException e) {
            log.warn("cannot watch the driver's events; retrying in 5s: {}", e.getMessage());
            var unused = scheduler.schedule(this::watchDriver, 5, TimeUnit.SECONDS);
        }
    }

    /** Applies the driver's events to the store, fenced by id, generation and pending transitions. */
    private final class DriverEvents implements SandboxWatcher {
        private final Set<String> seen = new HashSet<>();
        private final List<SandboxObservation> strangers = new ArrayList<>();
        private Instant windowStart;

        @Override
        public void onEvent(SandboxEvent event) {
            try {
                switch (event) {
                    case SandboxEvent.Snapshot s -> {
                        if (windowStart == null) {
                            windowStart = now();
                        }
                        seen.add(s.observation().ref().id());
                        if (!applyObservation(s.observation()) && strangers.size() < MAX_UNMANAGED_REPORTED) {
                            strangers.add(s.observation());
                        }
                    }
                    case SandboxEvent.Deleted d ->
                        markMissing(d.ref().id(), d.generation(), "the driver reported it deleted");
                    case SandboxEvent.Platform p -> publishPlatform(p);
                    case SandboxEvent.Synced y -> {
                        Instant start = windowStart == null ? now() : windowStart;
                        markUnseenMissing(Set.copyOf(seen), start);
                        reportUnmanaged(List.copyOf(strangers));
                        seen.clear();
                        strangers.clear();
                        windowStart = null;
                    }
                }
            } catch (RuntimeException e) {
                log.warn("applying a driver event failed", e);
            }
        }

        @Override
        public void onError(DriverException error) {
            log.warn("the driver's event subscription ended: {}; subscribing again in 5s", error.getMessage());
            var unused = scheduler.schedule(Reconciler.this::watchDriver, 5, TimeUnit.SECONDS);
        }
    }

    private void reportUnmanaged(List<SandboxObservation> found) {
        Set<String> known = new HashSet<>();
        unmanaged.forEach(o -> known.add(o.ref().id()));
        for (SandboxObservation o : found) {
            if (!known.contains(o.ref().id())) {
                log.warn(
                        "unmanaged runtime resource: it carries sandbox id {} ({}/{}) generation {} and this gateway's"
                                + " id, but the gateway has no record of it; it is not adopted",
                        o.ref().id(),
                        o.ref().workspace(),
                        o.ref().name(),
                        o.generation());
            }
        }
        unmanaged = found;
    }

    private void markUnseenMissing(Set<String> seen, Instant windowStart) {
        Optional<SandboxKey> after = Optional.empty();
        while (true) {
            Optional<SandboxKey> from = after;
            List<RuntimeState> page = store.read(tx -> tx.runtimeStates(from, RECONCILE_PAGE));
            for (RuntimeState row : page) {
                if (!seen.contains(row.id())
                        && !row.pending()
                        && row.runtimeGeneration() > 0
                        && row.updateTime().isBefore(windowStart)) {
                    markMissing(row.id(), row.generation(), "missing from the driver's resync");
                }
            }
            if (page.size() < RECONCILE_PAGE) {
                return;
            }
            RuntimeState last = page.getLast();
            after = Optional.of(new SandboxKey(last.workspace(), last.name()));
        }
    }

    /**
     * Whether {@link #decideObservation} would certainly find that {@code o} changes nothing and publishes nothing:
     * the id is unknown, or the observation is of the current generation and either a transition is pending or it
     * repeats the recorded phase and runtime state of a sandbox without RUNTIME_MISSING. Anything else (including what
     * it would log) is left to it.
     */
    private static boolean unchangedBy(Optional<RuntimeState> found, SandboxObservation o) {
        if (found.isEmpty()) {
            return true;
        }
        RuntimeState row = found.get();
        if (!row.workspace().equals(o.ref().workspace())
                || !row.name().equals(o.ref().name())
                || o.generation() != row.generation()) {
            return false;
        }
        if (row.pending()) {
            return true;
        }
        return !row.runtimeMissing()
                && observedPhase(row.phase(), false, o.state()) == row.phase()
                && row.runtimeGeneration() == o.generation()
                && row.runtimeState().equals(o.state().name())
                && row.runtimeDetail().equals(o.detail());
    }

    /**
     * An observation from the driver; false if the store has no sandbox with its id. Unknown ids create nothing; an observation of another generation than the
     * current one changes nothing (it is still streamed, with its own execution's token); nothing changes while a
     * transition is pending.
     */
    private boolean applyObservation(SandboxObservation o) {
        // Nearly every observation repeats what is stored (every resource at start-up and in the driver's first
        // scan): tell that from the runtime state alone, without reading and decoding the whole record.
        Optional<RuntimeState> state = store.runtimeState(o.ref().id());
        if (state.isEmpty()) {
            return false;
        }
        if (unchangedBy(state, o)) {
            return true;
        }
        Instant now = now();
        Observation observation = new Observation(o.generation(), o.state().name(), o.detail(), now, "");
        // Most events change nothing (the gateway's own transitions already recorded them): decide on a read first,
        // so that they do not queue behind the store's single writer.
        SandboxChange decided = decideObservation(store.sandbox(o.ref().id()), o, observation, now);
        if (decided == null) {
            return true;
        }
        SandboxChange change = decided.stateChanged()
                ? store.write(tx -> {
                    SandboxChange again = decideObservation(tx.sandbox(o.ref().id()), o, observation, now);
                    if (again == null || !again.stateChanged()) {
                        return again;
                    }
                    SandboxRecord updated = tx.updateSandbox(again.sandbox());
                    return new SandboxChange(SandboxChange.Type.MODIFIED, updated, observation, true);
                })
                : decided;
        if (change != null) {
            hub.publish(change);
        }
        return true;
    }

    /**
     * What an observation means for the stored sandbox: nothing (null), a change to stream without writing (another
     * generation), or the record to write (stateChanged, not yet written).
     */
    private static SandboxChange decideObservation(
            Optional<SandboxRecord> found, SandboxObservation o, Observation observation, Instant now) {
        if (found.isEmpty()) {
            return null;
        }
        SandboxRecord row = found.get();
        if (!row.workspace().equals(o.ref().workspace())
                || !row.name().equals(o.ref().name())) {
            log.warn(
                    "driver reported sandbox {} as {}/{}; ignored",
                    row.id(),
                    o.ref().workspace(),
                    o.ref().name());
            return null;
        }
        if (o.generation() != row.generation()) {
            if (o.generation() > row.generation()) {
                log.warn(
                        "driver reported generation {} of sandbox {}, newer than the claimed {}; ignored",
                        o.generation(),
                        row.id(),
                        row.generation());
                return null;
            }
            return new SandboxChange(SandboxChange.Type.MODIFIED, row, observation, false);
        }
        if (row.pending().isPresent()) {
            return null;
        }
        boolean missing = hasCondition(row, ConditionRecord.RUNTIME_MISSING);
        SandboxRecord.Builder builder = row.toBuilder()
                .phase(observedPhase(row.phase(), missing, o.state()))
                .runtime(o.generation(), o.state().name(), o.detail());
        if (missing) {
            builder.clearCondition(ConditionRecord.RUNTIME_MISSING);
        }
        if (builder.build().equals(row)) {
            return null;
        }
        return new SandboxChange(
                SandboxChange.Type.MODIFIED, builder.updateTime(now).build(), observation, true);
    }

    /**
     * The runtime resource of {@code generation} is gone. Marks the sandbox (ERROR, RUNTIME_MISSING) unless the id is
     * unknown, a transition is pending, or the generation is older than the current one.
     */
    private void markMissing(String sandboxId, long generation, String why) {
        // Most of these change nothing (a deleted sandbox's resource going away): decide on a read first, so that they
        // do not queue behind the store's single writer.
        if (store.sandbox(sandboxId)
                .filter(row -> marksMissing(row, generation))
                .isEmpty()) {
            return;
        }
        Instant now = now();
        SandboxChange change = store.write(tx -> {
            Optional<SandboxRecord> found = tx.sandbox(sandboxId);
            if (found.isEmpty() || !marksMissing(found.get(), generation)) {
                return null;
            }
            SandboxRecord row = found.get();
            SandboxRecord updated = tx.updateSandbox(row.toBuilder()
                    .phase(SandboxPhase.ERROR)
                    .runtime(row.runtimeGeneration(), "MISSING", why)
                    .condition(new ConditionRecord(
                            ConditionRecord.RUNTIME_MISSING,
                            "the runtime resource of generation " + generation + " is gone: " + why,
                            now))
                    .updateTime(now)
                    .build());
            return new SandboxChange(
                    SandboxChange.Type.MODIFIED, updated, new Observation(generation, "MISSING", why, now, ""), true);
        });
        if (change != null) {
            log.warn("sandbox {} generation {}: runtime resource missing ({})", sandboxId, generation, why);
            hub.publish(change);
        }
    }

    /** Whether the resource of {@code generation} going away makes {@code row} ERROR with RUNTIME_MISSING. */
    private static boolean marksMissing(SandboxRecord row, long generation) {
        return row.pending().isEmpty()
                && generation >= row.generation()
                && !hasCondition(row, ConditionRecord.RUNTIME_MISSING);
    }

    private static boolean hasCondition(SandboxRecord row, String type) {
        return row.conditions().stream().anyMatch(c -> c.type().equals(type));
    }

    private void publishPlatform(SandboxEvent.Platform p) {
        store.sandbox(p.ref().id())
                .ifPresent(row -> hub.publish(new SandboxChange(
                        SandboxChange.Type.PLATFORM,
                        row,
                        new Observation(p.generation(), row.runtimeState(), p.message(), now(), p.type()),
                        false)));
    }

    private static SandboxPhase observedPhase(SandboxPhase phase, boolean missing, SandboxState state) {
        if (missing) {
            return Transitions.phaseOf(state);
        }
        return switch (phase) {
            case PROVISIONING ->
                switch (state) {
                    case RUNNING -> SandboxPhase.READY;
                    case STOPPED -> SandboxPhase.STOPPED;
                    case FAILED -> SandboxPhase.ERROR;
                    case PROVISIONING, STOPPING, UNKNOWN -> SandboxPhase.PROVISIONING;
                };
            case READY ->
                switch (state) {
                    case STOPPED -> SandboxPhase.STOPPED;
                    case FAILED -> SandboxPhase.ERROR;
                    case PROVISIONING, RUNNING, STOPPING, UNKNOWN -> SandboxPhase.READY;
                };
            case STOPPED, ERROR, STOPPING, STARTING, DELETING -> phase;
        };
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Pruning

    private void pruneRequestsQuietly() {
        try {
            Instant cutoff = now().minus(settings.requestRetention());
            int pruned = ledger.prune(cutoff);
            if (pruned > 0) {
                log.info("pruned {} request records completed before {}", pruned, cutoff);
            }
        } catch (RuntimeException e) {
            log.warn("pruning request records failed", e);
        }
    }

    private Instant now() {
        return Transitions.now(clock);
    }

    private static Duration min(Duration a, Duration b) {
        Duration result = a.compareTo(b) <= 0 ? a : b;
        return result.isZero() ? Duration.ofSeconds(1) : result;
    }

    /** Stops the driver subscription, retries and pruning. */
    @Override
    public void close() {
        closed = true;
        WatchSubscription subscription = driverWatch;
        if (subscription != null) {
            subscription.close();
        }
        scheduler.shutdownNow();
        try {
            // A retry under way holds the sandbox's lock and the store: let it end before the store closes.
            if (!scheduler.awaitTermination(10, TimeUnit.SECONDS)) {
                log.warn("a lifecycle retry or pruning task did not stop within 10s of close");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
