package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.metrics.GatewayObserver;
import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.gateway.store.ConditionRecord;
import dev.sandgate.gateway.store.ErrorRecord;
import dev.sandgate.gateway.store.NameTakenException;
import dev.sandgate.gateway.store.PendingTransition;
import dev.sandgate.gateway.store.PolicyMode;
import dev.sandgate.gateway.store.PolicyRevisionRecord;
import dev.sandgate.gateway.store.RequestRecord;
import dev.sandgate.gateway.store.RequestResult;
import dev.sandgate.gateway.store.SandboxFilter;
import dev.sandgate.gateway.store.SandboxPhase;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.StaleRecordException;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.gateway.store.StoreTransaction;
import dev.sandgate.gateway.store.StoreTransaction.SandboxKey;
import dev.sandgate.gateway.store.TransitionKind;
import dev.sandgate.gateway.token.ExecutionTokens;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.WatchSubscription;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's lifecycle core: serializes operations per sandbox, records every transition as an intent before the
 * driver is called and its result after, replays requests by request id, captures one policy input per launch,
 * fences driver events and recovers unfinished transitions.
 *
 * <p>Every mutating operation follows the same shape: validate (nothing written on bad input), look up an earlier
 * request with the same request id (replay it), verify the execution token's signature, resolve the target once,
 * take the sandbox's lock within the caller's deadline, finish any pending transition of that sandbox, then in ONE
 * store transaction re-read the sandbox by id, check the target and the precondition and record the intent (with
 * the request record and, for starts, the generation claim and the captured policy revision). Only then is the
 * driver called, with a timeout; its result is committed with the request's result in one more transaction.
 *
 * <p>Threading: all public methods may be called concurrently. A client call's driver calls run on its own thread
 * (see {@link #answering}); recovery and background retries hand theirs to driver-call threads.
 */
public final class Lifecycle implements AutoCloseable {
    /** The overdue answer of the client call this thread is serving, while it serves one (see {@link #answering}). */
    private static final ThreadLocal<Consumer<GatewayException>> OVERDUE = new ThreadLocal<>();

    private static final Logger log = LoggerFactory.getLogger(Lifecycle.class);
    private static final int RECONCILE_PAGE = 500;
    /**
     * Request records removed per write transaction when pruning. Each removal rewrites a page of the request-id index
     * (the ids are random); 100 took 0.8 ms of the writer's time at the median here, 1,000 took 6.8 ms.
     */
    static final int PRUNE_BATCH = 100;

    private final Store store;
    private final ComputeDriver driver;
    private final String driverName;
    private final DriverCapabilities capabilities;
    private final ExecutionTokens tokens;
    private final WatchHub hub = new WatchHub();
    private final FaultInjector faults;
    private final Clock clock;
    private final LifecycleSettings settings;
    private final SandboxLocks locks = new SandboxLocks();
    private final ConcurrentHashMap<String, InFlight> inFlight = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Integer> retryAttempts = new ConcurrentHashMap<>();
    private final ExecutorService driverCalls;
    private final ScheduledExecutorService scheduler;
    /** Answers the callers of driver calls made on their own threads that overran the driver timeout. */
    private final ScheduledExecutorService watchdog;

    private final Set<OverdueWatch> watched = ConcurrentHashMap.newKeySet();
    private final CopyOnWriteArrayList<SandboxObservation> unmanaged = new CopyOnWriteArrayList<>();
    private volatile WatchSubscription driverWatch;
    private volatile boolean closed;
    private volatile GatewayObserver observer = GatewayObserver.NONE;

    public Lifecycle(
            Store store,
            ComputeDriver driver,
            String driverName,
            ExecutionTokens tokens,
            FaultInjector faults,
            Clock clock,
            LifecycleSettings settings) {
        this.store = requireNonNull(store, "store is null");
        this.driver = requireNonNull(driver, "driver is null");
        this.driverName = requireNonNull(driverName, "driverName is null");
        this.capabilities = requireNonNull(driver.capabilities(), "driver capabilities are null");
        this.tokens = requireNonNull(tokens, "tokens is null");
        this.faults = requireNonNull(faults, "faults is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.settings = requireNonNull(settings, "settings is null");
        this.driverCalls = Executors.newCachedThreadPool(daemonThreads("sandgate-driver-call"));
        this.scheduler = Executors.newSingleThreadScheduledExecutor(daemonThreads("sandgate-lifecycle"));
        this.watchdog = Executors.newSingleThreadScheduledExecutor(daemonThreads("sandgate-driver-watchdog"));
        long checkEvery = Math.clamp(settings.driverTimeout().toMillis() / 8, 10L, 1_000L);
        watchdog.scheduleWithFixedDelay(this::answerOverdue, checkEvery, checkEvery, TimeUnit.MILLISECONDS);
        Duration pruneEvery = min(settings.requestRetention().dividedBy(4), Duration.ofMinutes(10));
        scheduler.scheduleWithFixedDelay(
                this::pruneRequestsQuietly, pruneEvery.toMillis(), pruneEvery.toMillis(), TimeUnit.MILLISECONDS);
    }

    public String driverName() {
        return driverName;
    }

    /** Reports transitions, recoveries and retries to {@code observer} from now on (set it before {@link #recover}). */
    public void observeWith(GatewayObserver observer) {
        this.observer = requireNonNull(observer, "observer is null");
    }

    public GatewayObserver observer() {
        return observer;
    }

    public DriverCapabilities capabilities() {
        return capabilities;
    }

    public ExecutionTokens tokens() {
        return tokens;
    }

    /** Committed changes, for watch streams. */
    public WatchHub hub() {
        return hub;
    }

    /** How many sandboxes have a lock entry now; zero when no operation runs or waits. */
    public int lockEntries() {
        return locks.size();
    }

    /** Runtime resources stamped with this gateway's id for which the store has no record (found at start-up). */
    public List<SandboxObservation> unmanagedResources() {
        return List.copyOf(unmanaged);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Reads

    /** The sandbox the target names. NOT_FOUND or SANDBOX_ID_MISMATCH otherwise. */
    public SandboxRecord get(Commands.Target target) {
        return resolve(target);
    }

    /** One page of sandboxes after {@code after}, and whether more follow. */
    public record Page(List<SandboxRecord> sandboxes, boolean more) {}

    public Page list(SandboxFilter filter, Optional<SandboxKey> after, int limit) {
        List<SandboxRecord> rows = store.read(tx -> tx.listSandboxes(filter, after, limit + 1));
        boolean more = rows.size() > limit;
        return new Page(more ? rows.subList(0, limit) : rows, more);
    }

    public PolicyView policy(Commands.Target target) {
        SandboxRecord sandbox = resolve(target);
        return store.read(tx -> new PolicyView(
                sandbox,
                revision(tx, sandbox.id(), sandbox.admittedRevision()),
                revision(tx, sandbox.id(), sandbox.launchRevision())));
    }

    /** An earlier request by its request id; OPERATION_NOT_FOUND if none is recorded. */
    public OperationView operation(String requestId) {
        return operation(requestId, "");
    }

    /** An earlier request of {@code principal}; OPERATION_NOT_FOUND if none is recorded, or another's. */
    public OperationView operation(String requestId, String principal) {
        RequestRecord record = store.read(tx -> tx.request(requestId))
                .filter(r -> r.principal().equals(principal))
                .orElseThrow(() -> new GatewayException(
                        ErrorReason.OPERATION_NOT_FOUND,
                        "no request with id " + requestId + " is recorded (never made, or pruned after the retention"
                                + " period)"));
        if (record.result().isEmpty()) {
            return new OperationView(record, Optional.empty(), Optional.empty());
        }
        RequestResult result = record.result().get();
        if (result.error().isPresent()) {
            return new OperationView(record, Optional.empty(), result.error());
        }
        return new OperationView(record, Optional.of(replyFrom(result)), Optional.empty());
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Mutations

    public MutationReply create(Commands.Create c, Duration maxWait) {
        return admit("CreateSandbox", c.meta(), null, maxWait, adm -> {
            LaunchPolicy launchPolicy = c.policy().toLaunchPolicy(1);
            validateWithDriver(c.spec().toSpi(c.labels()), new LaunchInput(1, launchPolicy));
            String id = Identifiers.newSandboxId();
            try (SandboxLocks.Held held = locks.acquire(id, adm.remaining())) {
                Instant now = now();
                SandboxRecord intent;
                try {
                    intent = store.write(tx -> {
                        PendingTransition pending = pending(TransitionKind.CREATE, adm, 1, now);
                        SandboxRecord inserted = tx.insertSandbox(new SandboxRecord(
                                id,
                                c.workspace(),
                                c.name(),
                                SandboxPhase.PROVISIONING,
                                1,
                                now,
                                1,
                                c.policy().digest(),
                                0,
                                "",
                                "",
                                c.mode(),
                                1,
                                c.policy().digest(),
                                c.spec(),
                                c.labels(),
                                List.of(),
                                Optional.of(pending),
                                0,
                                now,
                                now));
                        tx.insertPolicyRevision(new PolicyRevisionRecord(
                                id, 1, c.policy().digest(), c.policy().canonicalDocument(), now));
                        adm.recordPending(tx, id, 1);
                        return inserted;
                    });
                } catch (NameTakenException e) {
                    throw new GatewayException(
                            ErrorReason.SANDBOX_ALREADY_EXISTS,
                            "workspace " + c.workspace() + " already has a sandbox named " + c.name(),
                            null,
                            List.of(),
                            Map.of("workspace", c.workspace(), "name", c.name()));
                }
                adm.committed(id, 1);
                publish(SandboxChange.Type.ADDED, intent, currentObservation(intent));
                faults.reached(FaultPoint.CREATE_AFTER_INTENT);
                MutationReply reply = drive(intent, false, Optional.of(new LaunchInput(1, launchPolicy)));
                return c.waitUntilReady() ? recordAnswer(adm, reply, awaitReady(reply, adm.remaining())) : reply;
            }
        });
    }

    public MutationReply stop(Commands.Stop c, Duration maxWait) {
        return admit("StopSandbox", c.meta(), c.target(), maxWait, adm -> {
            Optional<ExecutionTokens.Claim> claim = verifyToken(c.precondition());
            SandboxRecord resolved = adm.resolved(c.target());
            adm.target(resolved.id(), resolved.generation());
            try (SandboxLocks.Held held = locks.acquire(resolved.id(), adm.remaining())) {
                Instant now = now();
                Decision decision = writeSettled(c.target(), resolved.id(), (tx, row) -> {
                    checkPrecondition(c.precondition(), claim, row);
                    if (row.phase() == SandboxPhase.STOPPED
                            || (row.phase() == SandboxPhase.ERROR && row.runtimeGeneration() == 0)) {
                        adm.recordDone(tx, Outcome.ALREADY_STOPPED, row, null, now);
                        return Decision.done(row);
                    }
                    SandboxRecord intent = tx.updateSandbox(row.toBuilder()
                            .phase(SandboxPhase.STOPPING)
                            .pending(Optional.of(pending(TransitionKind.STOP, adm, row.runtimeGeneration(), now)))
                            .updateTime(now)
                            .build());
                    adm.recordPending(tx, row.id(), row.generation());
                    return Decision.proceed(intent);
                });
                adm.committed(decision.row().id(), decision.row().generation());
                if (decision.isDone()) {
                    logNoop("stop", decision.row(), Outcome.ALREADY_STOPPED, adm.meta.requestId());
                    return reply(Outcome.ALREADY_STOPPED, decision.row());
                }
                publish(SandboxChange.Type.MODIFIED, decision.row(), currentObservation(decision.row()));
                faults.reached(FaultPoint.STOP_AFTER_INTENT);
                return drive(decision.row(), false);
            }
        });
    }

    public MutationReply start(Commands.Start c, Duration maxWait) {
        return admit("StartSandbox", c.meta(), c.target(), maxWait, adm -> {
            SandboxRecord resolved = adm.resolved(c.target());
            adm.target(resolved.id(), resolved.generation());
            try (SandboxLocks.Held held = locks.acquire(resolved.id(), adm.remaining())) {
                StartPlan plan = planStart(resolved.id(), c.target());
                SandboxRecord row = plan.row();
                Instant now = now();
                Optional<LaunchInput> launch = Optional.empty();
                long revision = 0;
                String digest = "";
                if (plan.policy().isPresent()) {
                    PolicyRevisionRecord policy = plan.policy().get();
                    revision = policy.revision();
                    long captured = revision;
                    digest = policy.digest();
                    if (!digest.equals(row.launchDigest()) && !capabilities.launchPolicyOnStart()) {
                        throw new GatewayException(
                                ErrorReason.DRIVER_CAPABILITY_MISSING,
                                "driver " + driverName + " cannot launch a policy other than the previous execution's;"
                                        + " recreate the sandbox to change its policy");
                    }
                    LaunchInput input = new LaunchInput(
                            row.generation() + 1,
                            PolicyDocument.fromCanonical(policy.document()).toLaunchPolicy(captured));
                    validateWithDriver(row.spec().toSpi(row.labels()), input);
                    launch = Optional.of(input);
                }
                long claimedRevision = revision;
                String claimedDigest = digest;
                Decision decision = store.write(tx -> {
                    SandboxRecord current = reread(tx, c.target(), resolved.id());
                    if (isRunning(current)) {
                        adm.recordDone(tx, Outcome.ALREADY_RUNNING, current, null, now);
                        return Decision.done(current);
                    }
                    if (current.generation() != row.generation()
                            || current.admittedRevision() != row.admittedRevision()) {
                        throw new IllegalStateException("sandbox " + row.id() + " changed while its lock was held");
                    }
                    long generation = current.generation() + 1;
                    SandboxRecord intent = tx.updateSandbox(current.toBuilder()
                            .claim(generation, claimedRevision, claimedDigest, now)
                            .phase(SandboxPhase.STARTING)
                            .pending(Optional.of(pending(TransitionKind.START, adm, generation, now)))
                            .updateTime(now)
                            .build());
                    adm.recordPending(tx, current.id(), generation);
                    return Decision.proceed(intent);
                });
                adm.committed(decision.row().id(), decision.row().generation());
                if (decision.isDone() || launch.isEmpty()) {
                    logNoop("start", decision.row(), Outcome.ALREADY_RUNNING, adm.meta.requestId());
                    return reply(Outcome.ALREADY_RUNNING, decision.row());
                }
                publish(SandboxChange.Type.MODIFIED, decision.row(), currentObservation(decision.row()));
                faults.reached(FaultPoint.START_AFTER_INTENT);
                MutationReply reply = drive(decision.row(), false, launch);
                return c.waitUntilReady() ? recordAnswer(adm, reply, awaitReady(reply, adm.remaining())) : reply;
            }
        });
    }

    public MutationReply delete(Commands.Delete c, Duration maxWait) {
        return admit("DeleteSandbox", c.meta(), c.target(), maxWait, adm -> {
            Optional<ExecutionTokens.Claim> claim = verifyToken(c.precondition());
            SandboxRecord resolved;
            try {
                resolved = adm.resolved(c.target());
                adm.target(resolved.id(), resolved.generation());
                try (SandboxLocks.Held held = locks.acquire(resolved.id(), adm.remaining())) {
                    Instant now = now();
                    SandboxRecord intent =
                            writeSettled(c.target(), resolved.id(), Superseding::finishBeforeDelete, (tx, row) -> {
                                checkPrecondition(c.precondition(), claim, row);
                                // A pending create or start is cancelled here, in the delete's own transaction; the
                                // delete then removes whatever carries the id, of any generation it may have reached.
                                PendingTransition delete = pending(
                                        TransitionKind.DELETE,
                                        adm,
                                        row.pending().isPresent() ? 0 : row.runtimeGeneration(),
                                        now);
                                row.pending()
                                        .ifPresent(cancelled -> complete(
                                                tx,
                                                cancelled,
                                                Superseding.cancelledResult(row, cancelled, delete.operationId()),
                                                now));
                                SandboxRecord updated = tx.updateSandbox(row.toBuilder()
                                        .phase(SandboxPhase.DELETING)
                                        .pending(Optional.of(delete))
                                        .updateTime(now)
                                        .build());
                                adm.recordPending(tx, row.id(), row.generation());
                                return updated;
                            });
                    adm.committed(intent.id(), intent.generation());
                    publish(SandboxChange.Type.MODIFIED, intent, currentObservation(intent));
                    faults.reached(FaultPoint.DELETE_AFTER_INTENT);
                    return drive(intent, false);
                }
            } catch (GatewayException e) {
                if (e.reason() != ErrorReason.SANDBOX_NOT_FOUND || !c.allowMissing()) {
                    throw e;
                }
                Instant now = now();
                store.write(tx -> {
                    adm.recordDone(tx, Outcome.NOTHING_DELETED, null, 0, 0, now);
                    return null;
                });
                adm.committed(null, 0);
                log.info(
                        "transition sandbox=none target={} op=delete generation=0 outcome={} durationMs=0",
                        c.target().toString().strip(),
                        Outcome.NOTHING_DELETED);
                return new MutationReply(
                        Outcome.NOTHING_DELETED, Optional.empty(), 0, Optional.empty(), Optional.empty(), false);
            }
        });
    }

    public MutationReply updatePolicy(Commands.UpdatePolicy c, Duration maxWait) {
        return admit("UpdateSandboxPolicy", c.meta(), c.target(), maxWait, adm -> {
            SandboxRecord resolved = adm.resolved(c.target());
            adm.target(resolved.id(), resolved.generation());
            try (SandboxLocks.Held held = locks.acquire(resolved.id(), adm.remaining())) {
                completePending(resolved.id(), c.target());
                Instant now = now();
                PolicyDocument proposed = c.policy();
                Decision decision = store.write(tx -> {
                    SandboxRecord row = reread(tx, c.target(), resolved.id());
                    if (row.policyMode() == PolicyMode.FROZEN) {
                        throw new GatewayException(
                                ErrorReason.POLICY_FROZEN,
                                "sandbox " + row.id() + " has a FROZEN policy: it keeps its creation snapshot");
                    }
                    if (c.expectedRevision() != 0 && c.expectedRevision() != row.admittedRevision()) {
                        throw GatewayException.withMismatch(
                                ErrorReason.REVISION_MISMATCH,
                                "the admitted policy revision is " + row.admittedRevision() + ", not "
                                        + c.expectedRevision(),
                                new Mismatch(
                                        "policy_revision",
                                        Long.toString(c.expectedRevision()),
                                        Long.toString(row.admittedRevision())));
                    }
                    if (proposed.digest().equals(row.admittedDigest())) {
                        adm.recordDone(tx, Outcome.UNCHANGED, row, revision(tx, row.id(), row.admittedRevision()), now);
                        return Decision.done(row);
                    }
                    if (!capabilities.launchPolicyOnStart()) {
                        throw new GatewayException(
                                ErrorReason.DRIVER_CAPABILITY_MISSING,
                                "driver " + driverName + " cannot launch a changed policy, so no new revision can be"
                                        + " admitted");
                    }
                    PolicyDocument launched = PolicyDocument.fromCanonical(
                            revision(tx, row.id(), row.launchRevision()).document());
                    if (proposed.staticDiffers(launched) && row.phase().mayRun()) {
                        throw new GatewayException(
                                ErrorReason.STATIC_POLICY_CHANGE_REQUIRES_STOP,
                                "the static policy of sandbox " + row.id() + " cannot change while it may run"
                                        + " (phase " + row.phase() + "); stop it first");
                    }
                    long next = row.admittedRevision() + 1;
                    // The driver's whole check, not only its capabilities: a revision admitted now must be launchable
                    // by the next start (a VM's minimum memory, say), or the sandbox would keep one it cannot start.
                    validateWithDriver(
                            row.spec().toSpi(row.labels()),
                            new LaunchInput(row.generation() + 1, proposed.toLaunchPolicy(next)));
                    PolicyRevisionRecord admitted = new PolicyRevisionRecord(
                            row.id(), next, proposed.digest(), proposed.canonicalDocument(), now);
                    tx.insertPolicyRevision(admitted);
                    SandboxRecord written = tx.updateSandbox(row.toBuilder()
                            .admitted(next, proposed.digest())
                            .updateTime(now)
                            .build());
                    adm.recordDone(tx, Outcome.ADMITTED, written, admitted, now);
                    return Decision.proceed(written);
                });
                SandboxRecord updated = decision.row();
                adm.committed(updated.id(), updated.generation());
                Outcome outcome = decision.isDone() ? Outcome.UNCHANGED : Outcome.ADMITTED;
                if (outcome == Outcome.ADMITTED) {
                    publish(SandboxChange.Type.MODIFIED, updated, currentObservation(updated));
                }
                log.info(
                        "policy sandbox={} op=update-policy generation={} outcome={} revision={}",
                        updated.id(),
                        updated.generation(),
                        outcome,
                        updated.admittedRevision());
                PolicyRevisionRecord admitted = committedRevision(updated.id(), updated.admittedRevision());
                return new MutationReply(
                        outcome,
                        Optional.of(updated.id()),
                        updated.generation(),
                        Optional.of(updated),
                        Optional.of(admitted),
                        false);
            }
        });
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Recovery and driver events

    /**
     * Completes every transition left pending (by a crash or a timed-out driver call) with its committed input, then
     * reconciles the store against the driver's list and subscribes to the driver's events. Call once, before
     * serving.
     */
    public void recover() {
        List<SandboxRecord> pending = store.read(StoreTransaction::pendingSandboxes);
        for (SandboxRecord row : pending) {
            PendingTransition transition = row.pending().orElseThrow();
            log.info(
                    "recovery sandbox={} op={} generation={} operation={}",
                    row.id(),
                    transition.kind().name().toLowerCase(java.util.Locale.ROOT),
                    row.generation(),
                    transition.operationId());
            observer.recovery();
            try (SandboxLocks.Held held = locks.acquire(row.id(), settings.defaultWait())) {
                // Finishing a delete removes the sandbox: that is its completion, not a failure to look it up after.
                store.sandbox(row.id()).filter(r -> r.pending().isPresent()).ifPresent(this::finishPending);
            } catch (GatewayException e) {
                log.warn("recovery of sandbox {} did not complete: {}", row.id(), e.getMessage());
            }
        }
        reconcile();
        watchDriver();
    }

    private void reconcile() {
        List<SandboxObservation> observed;
        try {
            observed = call(driver::list);
        } catch (DriverException e) {
            log.warn("cannot list the driver's runtime resources; reconciliation skipped: {}", e.getMessage());
            return;
        }
        Map<String, SandboxObservation> byId = new HashMap<>();
        for (SandboxObservation o : observed) {
            byId.put(o.ref().id(), o);
        }
        Optional<SandboxKey> after = Optional.empty();
        while (true) {
            Optional<SandboxKey> from = after;
            List<SandboxRecord> page = store.read(tx -> tx.listSandboxes(SandboxFilter.ALL, from, RECONCILE_PAGE));
            for (SandboxRecord row : page) {
                SandboxObservation o = byId.remove(row.id());
                if (o != null) {
                    applyObservation(o);
                } else if (row.pending().isEmpty() && row.runtimeGeneration() > 0) {
                    markMissing(row.id(), row.generation(), "not found among the driver's resources at start-up");
                }
            }
            if (page.size() < RECONCILE_PAGE) {
                break;
            }
            SandboxRecord last = page.getLast();
            after = Optional.of(new SandboxKey(last.workspace(), last.name()));
        }
        unmanaged.clear();
        for (SandboxObservation o : byId.values()) {
            unmanaged.add(o);
            log.warn(
                    "unmanaged runtime resource: it carries sandbox id {} ({}/{}) generation {} and this gateway's id,"
                            + " but the gateway has no record of it; it is not adopted",
                    o.ref().id(),
                    o.ref().workspace(),
                    o.ref().name(),
                    o.generation());
        }
    }

    private void watchDriver() {
        if (closed) {
            return;
        }
        try {
            driverWatch = driver.watch(new DriverEvents());
        } catch (RuntimeException e) {
            log.warn("cannot watch the driver's events; retrying in 5s: {}", e.getMessage());
            scheduler.schedule(this::watchDriver, 5, TimeUnit.SECONDS);
        }
    }

    /** Applies the driver's events to the store, fenced by id, generation and pending transitions. */
    private final class DriverEvents implements SandboxWatcher {
        private final Set<String> seen = new HashSet<>();
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
                        applyObservation(s.observation());
                    }
                    case SandboxEvent.Deleted d ->
                        markMissing(d.ref().id(), d.generation(), "the driver reported it deleted");
                    case SandboxEvent.Platform p -> publishPlatform(p);
                    case SandboxEvent.Synced y -> {
                        Instant start = windowStart == null ? now() : windowStart;
                        markUnseenMissing(Set.copyOf(seen), start);
                        seen.clear();
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
            scheduler.schedule(Lifecycle.this::watchDriver, 5, TimeUnit.SECONDS);
        }
    }

    private void markUnseenMissing(Set<String> seen, Instant windowStart) {
        Optional<SandboxKey> after = Optional.empty();
        while (true) {
            Optional<SandboxKey> from = after;
            List<SandboxRecord> page = store.read(tx -> tx.listSandboxes(SandboxFilter.ALL, from, RECONCILE_PAGE));
            for (SandboxRecord row : page) {
                if (!seen.contains(row.id())
                        && row.pending().isEmpty()
                        && row.runtimeGeneration() > 0
                        && row.updateTime().isBefore(windowStart)) {
                    markMissing(row.id(), row.generation(), "missing from the driver's resync");
                }
            }
            if (page.size() < RECONCILE_PAGE) {
                return;
            }
            SandboxRecord last = page.getLast();
            after = Optional.of(new SandboxKey(last.workspace(), last.name()));
        }
    }

    /**
     * An observation from the driver. Unknown ids create nothing; an observation of another generation than the
     * current one changes nothing (it is still streamed, with its own execution's token); nothing changes while a
     * transition is pending.
     */
    void applyObservation(SandboxObservation o) {
        Instant now = now();
        Observation observation = new Observation(o.generation(), o.state().name(), o.detail(), now, "");
        // Most events change nothing (the gateway's own transitions already recorded them): decide on a read first,
        // so that they do not queue behind the store's single writer.
        SandboxChange decided = decideObservation(store.sandbox(o.ref().id()), o, observation, now);
        if (decided == null) {
            return;
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
            return phaseOf(state);
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

    /** The phase a runtime state means when no transition is pending. */
    private static SandboxPhase phaseOf(SandboxState state) {
        return switch (state) {
            case PROVISIONING -> SandboxPhase.PROVISIONING;
            case RUNNING, STOPPING -> SandboxPhase.READY;
            case STOPPED -> SandboxPhase.STOPPED;
            case FAILED, UNKNOWN -> SandboxPhase.ERROR;
        };
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Transitions

    /** {@link #drive(SandboxRecord, boolean, Optional)} with the launch input read from the committed revision. */
    private MutationReply drive(SandboxRecord row, boolean resumed) {
        return drive(row, resumed, Optional.empty());
    }

    /**
     * Calls the driver for a committed transition and commits its result. The caller holds the sandbox's lock.
     *
     * @param resumed whether this completes a transition started earlier (recovery, a retry)
     * @param committedInput the launch input of a create or start this operation has just committed, built from the
     *     very revision it committed; empty (recovery, retries): read from the committed revision
     */
    private MutationReply drive(SandboxRecord row, boolean resumed, Optional<LaunchInput> committedInput) {
        PendingTransition transition = row.pending().orElseThrow();
        long started = System.nanoTime();
        SandboxRef ref = row.ref();
        try {
            return switch (transition.kind()) {
                case CREATE -> {
                    LaunchInput input = committedInput.orElseGet(() -> launchInput(row));
                    SandboxSpec spec = row.spec().toSpi(row.labels());
                    SandboxObservation o = transitionCall(row, transition, () -> driver.create(ref, spec, input))
                            .observation();
                    faults.reached(FaultPoint.CREATE_AFTER_DRIVER);
                    yield commitLaunch(row, transition, o, Outcome.CREATED, started);
                }
                case START -> {
                    LaunchInput input = committedInput.orElseGet(() -> launchInput(row));
                    SandboxObservation o = transitionCall(row, transition, () -> driver.start(ref, input))
                            .observation();
                    faults.reached(FaultPoint.START_AFTER_DRIVER);
                    yield commitLaunch(row, transition, o, Outcome.LAUNCHED, started);
                }
                case STOP -> {
                    var result = transitionCall(row, transition, () -> driver.stop(ref, expected(transition)));
                    faults.reached(FaultPoint.STOP_AFTER_DRIVER);
                    Outcome outcome = result.stoppedNow() || resumed ? Outcome.STOPPED_NOW : Outcome.ALREADY_STOPPED;
                    yield commitStopped(row, transition, result.observation(), outcome, started);
                }
                case DELETE -> {
                    transitionCall(row, transition, () -> driver.delete(ref, expected(transition)));
                    faults.reached(FaultPoint.DELETE_AFTER_DRIVER);
                    yield commitDeleted(row, transition, started);
                }
            };
        } catch (DriverException e) {
            if (GatewayException.isTransient(e.code())) {
                logTransition(row, transition, "PENDING(" + e.code() + ")", started, Optional.of(e.getMessage()));
                scheduleRetry(row.id());
                throw transitionPending(row, transition, e.getMessage());
            }
            GatewayException failure = GatewayException.fromDriver(e);
            commitFailure(row, transition, e, failure, started);
            throw failure;
        }
    }

    /** What the caller of a transition hears while its driver call has not completed it. */
    private static GatewayException transitionPending(SandboxRecord row, PendingTransition transition, String why) {
        return new GatewayException(
                ErrorReason.TRANSITION_PENDING,
                verb(transition.kind()) + " of sandbox " + row.id()
                        + " is recorded but the driver did not complete it (" + why
                        + "); the gateway completes it later, retry with the same request_id to get its result",
                null,
                List.of(),
                Map.of("sandbox_id", row.id(), "operation_id", transition.operationId()));
    }

    private MutationReply commitLaunch(
            SandboxRecord row, PendingTransition transition, SandboxObservation o, Outcome outcome, long started) {
        Instant now = now();
        SandboxRecord updated = store.write(tx -> {
            SandboxRecord written = update(
                    tx,
                    row,
                    current -> current.toBuilder()
                            .phase(launchPhase(o.state()))
                            .runtime(o.generation(), o.state().name(), o.detail())
                            .pending(Optional.empty())
                            .clearCondition(ConditionRecord.LAST_OPERATION_FAILED)
                            .clearCondition(ConditionRecord.RUNTIME_MISSING)
                            .updateTime(now)
                            .build());
            complete(
                    tx,
                    transition,
                    RequestResult.success(outcome.name(), row.id(), row.generation(), 0)
                            .answered(Optional.of(written), Optional.empty()),
                    now);
            return written;
        });
        logTransition(updated, transition, outcome.name(), started);
        publish(SandboxChange.Type.MODIFIED, updated, observationOf(o, now));
        return reply(outcome, updated);
    }

    private MutationReply commitStopped(
            SandboxRecord row, PendingTransition transition, SandboxObservation o, Outcome outcome, long started) {
        Instant now = now();
        SandboxRecord updated = store.write(tx -> {
            SandboxRecord written = update(
                    tx,
                    row,
                    current -> current.toBuilder()
                            .phase(SandboxPhase.STOPPED)
                            .runtime(o.generation(), o.state().name(), o.detail())
                            .pending(Optional.empty())
                            .clearCondition(ConditionRecord.LAST_OPERATION_FAILED)
                            .updateTime(now)
                            .build());
            complete(
                    tx,
                    transition,
                    RequestResult.success(outcome.name(), row.id(), row.generation(), 0)
                            .answered(Optional.of(written), Optional.empty()),
                    now);
            return written;
        });
        logTransition(updated, transition, outcome.name(), started);
        publish(SandboxChange.Type.MODIFIED, updated, observationOf(o, now));
        return reply(outcome, updated);
    }

    private MutationReply commitDeleted(SandboxRecord row, PendingTransition transition, long started) {
        Instant now = now();
        SandboxRecord last = store.write(tx -> {
            SandboxRecord current = row;
            try {
                tx.deleteSandbox(row.id(), row.resourceVersion());
            } catch (StaleRecordException e) {
                current = tx.sandbox(row.id()).orElseThrow();
                tx.deleteSandbox(current.id(), current.resourceVersion());
            }
            complete(
                    tx,
                    transition,
                    RequestResult.success(Outcome.DELETED_NOW.name(), row.id(), row.generation(), 0),
                    now);
            return current;
        });
        logTransition(last, transition, Outcome.DELETED_NOW.name(), started);
        hub.publish(new SandboxChange(
                SandboxChange.Type.REMOVED,
                last.toBuilder().updateTime(now).build(),
                new Observation(last.runtimeGeneration(), "DELETED", "", now, ""),
                true));
        return new MutationReply(
                Outcome.DELETED_NOW,
                Optional.of(row.id()),
                row.generation(),
                Optional.empty(),
                Optional.empty(),
                false);
    }

    private void commitFailure(
            SandboxRecord row,
            PendingTransition transition,
            DriverException cause,
            GatewayException failure,
            long started) {
        Optional<SandboxObservation> fresh = Optional.empty();
        if (cause.code() != DriverErrorCode.NOT_FOUND) {
            try {
                fresh = Optional.of(call(() -> driver.get(row.ref())));
            } catch (DriverException e) {
                // Best effort: without a fresh observation the sandbox is marked ERROR.
            }
        }
        Optional<SandboxObservation> observed = fresh;
        Instant now = now();
        SandboxRecord updated = store.write(tx -> {
            SandboxRecord current = tx.sandbox(row.id()).orElseThrow();
            SandboxRecord.Builder builder = current.toBuilder()
                    .pending(Optional.empty())
                    .condition(new ConditionRecord(
                            ConditionRecord.LAST_OPERATION_FAILED,
                            verb(transition.kind()) + " failed: " + failure.getMessage(),
                            now))
                    .updateTime(now);
            SandboxPhase phase = SandboxPhase.ERROR;
            if (cause.code() == DriverErrorCode.NOT_FOUND) {
                builder.condition(new ConditionRecord(
                        ConditionRecord.RUNTIME_MISSING, "the driver found no runtime resource for the id", now));
            }
            if (observed.isPresent() && observed.get().generation() <= current.generation()) {
                SandboxObservation o = observed.get();
                builder.runtime(o.generation(), o.state().name(), o.detail());
                if (transition.kind() == TransitionKind.STOP || transition.kind() == TransitionKind.DELETE) {
                    phase = phaseOf(o.state());
                }
            }
            SandboxRecord written = tx.updateSandbox(builder.phase(phase).build());
            complete(
                    tx,
                    transition,
                    RequestResult.failure(ErrorRecord.of(failure), Optional.of(row.id()), row.generation()),
                    now);
            return written;
        });
        logTransition(updated, transition, "FAILED(" + failure.reason() + ")", started);
        publish(SandboxChange.Type.MODIFIED, updated, currentObservation(updated));
    }

    /**
     * Writes {@code change} applied to {@code expected} with a compare-and-set. While a transition is pending only the
     * lock holder writes the sandbox, so the intent row is normally still current; if not, the change is applied to
     * the stored row.
     */
    private static SandboxRecord update(
            StoreTransaction tx, SandboxRecord expected, java.util.function.UnaryOperator<SandboxRecord> change) {
        try {
            return tx.updateSandbox(change.apply(expected));
        } catch (StaleRecordException e) {
            return tx.updateSandbox(change.apply(tx.sandbox(expected.id()).orElseThrow()));
        }
    }

    private static void complete(StoreTransaction tx, PendingTransition transition, RequestResult result, Instant now) {
        transition.requestId().ifPresent(requestId -> tx.completeRequest(requestId, result, now));
    }

    /** Under the sandbox's lock: finishes a pending transition, if any, and returns the sandbox as it is then. */
    private SandboxRecord completePending(String sandboxId, Commands.Target target) {
        SandboxRecord row = store.sandbox(sandboxId).orElseThrow(() -> notFound(target));
        if (row.pending().isEmpty()) {
            return row;
        }
        finishPending(row);
        return store.sandbox(sandboxId).orElseThrow(() -> notFound(target));
    }

    /** Under the sandbox's lock: drives the pending transition of {@code row} to its end. */
    private void finishPending(SandboxRecord row) {
        try {
            drive(row, true);
        } catch (GatewayException e) {
            if (e.reason() == ErrorReason.TRANSITION_PENDING) {
                throw e;
            }
            // A definitive failure was recorded as that transition's own result; this operation goes on.
        }
    }

    /** A row with a transition still pending, found where a decision was to be made (see {@link #writeSettled}). */
    private record Unsettled(SandboxRecord row) {}

    /**
     * Under the sandbox's lock: runs {@code decide} on the sandbox as stored, in one write transaction. A transition
     * left pending (a crash, a timed-out driver call) is finished first, outside that transaction, and the decision is
     * made again on the result; the transaction that found it writes nothing. Most operations find none, so this costs
     * one transaction instead of a read before the write.
     */
    private <T> T writeSettled(
            Commands.Target target, String sandboxId, BiFunction<StoreTransaction, SandboxRecord, T> decide) {
        return writeSettled(target, sandboxId, pending -> true, decide);
    }

    /** {@link #writeSettled} that finishes first only the pending transitions {@code finishFirst} accepts. */
    private <T> T writeSettled(
            Commands.Target target,
            String sandboxId,
            java.util.function.Predicate<PendingTransition> finishFirst,
            BiFunction<StoreTransaction, SandboxRecord, T> decide) {
        return settled(
                sandboxId,
                () -> store.write(tx -> {
                    SandboxRecord row = reread(tx, target, sandboxId);
                    return row.pending().filter(finishFirst).isPresent() ? new Unsettled(row) : decide.apply(tx, row);
                }));
    }

    /**
     * Runs {@code look} (a transaction that answers {@link Unsettled} instead of deciding when it finds a pending
     * transition) until it decides, finishing the pending transition in between.
     */
    private <T> T settled(String sandboxId, Supplier<Object> look) {
        for (int attempt = 1; ; attempt++) {
            Object outcome = look.get();
            if (!(outcome instanceof Unsettled unsettled)) {
                @SuppressWarnings("unchecked")
                T decided = (T) outcome;
                return decided;
            }
            if (attempt == 3) {
                throw new IllegalStateException("sandbox " + sandboxId + " still has a pending transition");
            }
            finishPending(unsettled.row());
        }
    }

    /** What a start needs, read in one transaction: the sandbox and, unless it runs, the policy it would launch. */
    private record StartPlan(SandboxRecord row, Optional<PolicyRevisionRecord> policy) {}

    /** Under the sandbox's lock: the start plan of the sandbox as stored, after finishing a pending transition. */
    private StartPlan planStart(String sandboxId, Commands.Target target) {
        // The row as last committed (the caller holds the sandbox's lock; the launch's commit compares its version),
        // and the revision it admits, which never changes once admitted: both may come from the store's memory.
        return settled(sandboxId, () -> {
            SandboxRecord row = store.sandbox(sandboxId).orElseThrow(() -> notFound(target));
            if (row.pending().isPresent()) {
                return new Unsettled(row);
            }
            if (isRunning(row)) {
                return new StartPlan(row, Optional.empty());
            }
            // LIVE launches the admitted revision; FROZEN always its creation snapshot.
            long revision = row.policyMode() == PolicyMode.FROZEN ? 1 : row.admittedRevision();
            return new StartPlan(row, Optional.of(committedRevision(row.id(), revision)));
        });
    }

    private void scheduleRetry(String sandboxId) {
        if (closed) {
            return;
        }
        observer.retry();
        int attempt = retryAttempts.merge(sandboxId, 1, Integer::sum);
        long delayMillis = Math.min(settings.maxRetryBackoff().toMillis(), 500L << Math.min(attempt, 16));
        scheduler.schedule(
                () -> {
                    try (SandboxLocks.Held held = locks.acquire(sandboxId, settings.defaultWait())) {
                        completePending(sandboxId, Commands.Target.byId(sandboxId));
                        retryAttempts.remove(sandboxId);
                    } catch (GatewayException e) {
                        if (e.reason() == ErrorReason.SANDBOX_NOT_FOUND) {
                            retryAttempts.remove(sandboxId);
                        } else if (e.reason() == ErrorReason.SANDBOX_BUSY) {
                            scheduleRetry(sandboxId);
                        }
                    } catch (RuntimeException e) {
                        log.warn("retrying the pending transition of sandbox {} failed", sandboxId, e);
                        scheduleRetry(sandboxId);
                    }
                },
                delayMillis,
                TimeUnit.MILLISECONDS);
    }

    private MutationReply awaitReady(MutationReply reply, Duration maxWait) {
        if (reply.sandbox().isEmpty()) {
            return reply;
        }
        String id = reply.sandbox().get().id();
        CountDownLatch settled = new CountDownLatch(1);
        try (WatchHub.Registration registration = hub.register(change -> {
            if (change.sandbox().id().equals(id)
                    && (change.type() == SandboxChange.Type.REMOVED || !awaitingLaunch(change.sandbox()))) {
                settled.countDown();
            }
        })) {
            Optional<SandboxRecord> now = store.sandbox(id);
            if (now.isPresent() && awaitingLaunch(now.get())) {
                try {
                    settled.await(maxWait.toNanos(), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        Optional<SandboxRecord> latest = store.sandbox(id);
        return new MutationReply(
                reply.outcome(), reply.sandboxId(), reply.generation(), latest, reply.revision(), reply.replayed());
    }

    /**
     * A wait_until_ready answer shows the sandbox after the wait: it replaces the answer recorded with the transition,
     * so that a replay is this answer.
     */
    private MutationReply recordAnswer(Admission adm, MutationReply committed, MutationReply awaited) {
        if (adm.meta.requestId().isEmpty() || awaited.sandbox().equals(committed.sandbox())) {
            return awaited;
        }
        String requestId = adm.meta.requestId().get();
        store.write(tx -> {
            tx.request(requestId)
                    .flatMap(RequestRecord::result)
                    .filter(result -> result.error().isEmpty())
                    .ifPresent(result ->
                            tx.replaceRequestResult(requestId, result.answered(awaited.sandbox(), awaited.revision())));
            return null;
        });
        return awaited;
    }

    private static boolean awaitingLaunch(SandboxRecord sandbox) {
        return sandbox.phase() == SandboxPhase.PROVISIONING || sandbox.phase() == SandboxPhase.STARTING;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Requests and idempotency

    /** One admitted request: its idempotency bookkeeping and its deadline. */
    private final class Admission {
        final String method;
        final Commands.RequestMeta meta;
        final long deadlineNanos;
        boolean recorded;
        String sandboxId;
        long generation;
        /** The target as resolved in the transaction that found no earlier request with this request_id. */
        SandboxRecord prefetched;
        /** Or why it did not resolve. */
        GatewayException prefetchFailure;

        Admission(String method, Commands.RequestMeta meta, Duration maxWait) {
            this.method = method;
            this.meta = meta;
            this.deadlineNanos = System.nanoTime() + maxWait.toNanos();
        }

        Duration remaining() {
            return Duration.ofNanos(Math.max(0, deadlineNanos - System.nanoTime()));
        }

        /** Resolves {@code target} to the stored sandbox: once, in the request's look-up if it had one. */
        SandboxRecord resolved(Commands.Target target) {
            if (prefetchFailure != null) {
                throw prefetchFailure;
            }
            return prefetched != null ? prefetched : resolve(target);
        }

        void target(String id, long gen) {
            this.sandboxId = id;
            this.generation = gen;
        }

        /** Records the request as admitted and pending, in the intent's transaction. */
        void recordPending(StoreTransaction tx, String id, long gen) {
            meta.requestId()
                    .ifPresent(requestId -> tx.insertRequest(new RequestRecord(
                            requestId,
                            method,
                            meta.fingerprint(),
                            Optional.of(id),
                            gen,
                            Optional.empty(),
                            now(),
                            Optional.empty(),
                            meta.principal())));
        }

        /** {@link #recordDone} of an answer that shows {@code sandbox} (and {@code revision}, if not null). */
        void recordDone(
                StoreTransaction tx,
                Outcome outcome,
                SandboxRecord sandbox,
                PolicyRevisionRecord revision,
                Instant now) {
            recordDone(
                    tx,
                    outcome,
                    RequestResult.success(
                                    outcome.name(),
                                    sandbox.id(),
                                    sandbox.generation(),
                                    revision == null ? 0 : revision.revision())
                            .answered(Optional.of(sandbox), Optional.ofNullable(revision)),
                    now);
        }

        /** Records the request as finished, in the transaction that decided its outcome. */
        void recordDone(StoreTransaction tx, Outcome outcome, String id, long gen, long revision, Instant now) {
            recordDone(tx, outcome, RequestResult.success(outcome.name(), id, gen, revision), now);
        }

        private void recordDone(StoreTransaction tx, Outcome outcome, RequestResult result, Instant now) {
            meta.requestId()
                    .ifPresent(requestId -> tx.insertRequest(new RequestRecord(
                            requestId,
                            method,
                            meta.fingerprint(),
                            result.sandboxId(),
                            result.generation(),
                            Optional.of(result),
                            now,
                            Optional.of(now),
                            meta.principal())));
        }

        /** Called after the transaction that recorded the request committed. */
        void committed(String id, long gen) {
            this.recorded = true;
            target(id, gen);
        }
    }

    /** A driver call made on its caller's thread, watched for the driver timeout (one per call: identity matters). */
    private static final class OverdueWatch {
        final long deadlineNanos;
        final Consumer<GatewayException> overdue;
        final Supplier<GatewayException> pending;

        OverdueWatch(long deadlineNanos, Consumer<GatewayException> overdue, Supplier<GatewayException> pending) {
            this.deadlineNanos = deadlineNanos;
            this.overdue = overdue;
            this.pending = pending;
        }
    }

    /** A request id being processed in this process; duplicates wait for its result. */
    private record InFlight(
            String method, String fingerprint, String principal, CompletableFuture<MutationReply> result) {}

    /** What the first read of a request found: an earlier request with its request_id, or else its target. */
    private record Lookup(Optional<RequestRecord> request, SandboxRecord target, GatewayException failure) {}

    /**
     * Admits one mutating request: replays an earlier request with its request_id, joins a duplicate in flight, or
     * runs {@code body}. {@code target} (null for a create) is resolved in the same read as the request_id's look-up.
     */
    private MutationReply admit(
            String method,
            Commands.RequestMeta meta,
            Commands.Target target,
            Duration maxWait,
            Function<Admission, MutationReply> body) {
        if (closed) {
            throw new GatewayException(ErrorReason.GATEWAY_SHUTTING_DOWN, "the gateway is shutting down");
        }
        Admission admission = new Admission(method, meta, maxWait);
        if (meta.requestId().isEmpty()) {
            return run(admission, body);
        }
        String requestId = meta.requestId().get();
        InFlight mine = new InFlight(method, meta.fingerprint(), meta.principal(), new CompletableFuture<>());
        InFlight existing = inFlight.putIfAbsent(requestId, mine);
        if (existing != null) {
            if (!existing.method().equals(method)
                    || !existing.fingerprint().equals(meta.fingerprint())
                    || !existing.principal().equals(meta.principal())) {
                throw reused(requestId);
            }
            return awaitDuplicate(existing, admission);
        }
        try {
            Lookup lookup;
            if (target == null || target.id().isPresent()) {
                // Nothing to resolve now: a target named by id is resolved from the store's last committed rows when
                // the body asks for it.
                lookup = new Lookup(store.request(requestId), null, null);
            } else {
                lookup = store.read(tx -> {
                    Optional<RequestRecord> stored = tx.request(requestId);
                    if (stored.isPresent()) {
                        return new Lookup(stored, null, null);
                    }
                    // A replay never resolves the name again, so the target is resolved only for a new request.
                    try {
                        return new Lookup(stored, resolveIn(tx, target), null);
                    } catch (GatewayException e) {
                        return new Lookup(stored, null, e);
                    }
                });
            }
            admission.prefetched = lookup.target();
            admission.prefetchFailure = lookup.failure();
            MutationReply reply =
                    lookup.request().isPresent() ? replay(lookup.request().get(), admission) : run(admission, body);
            mine.result().complete(reply);
            return reply;
        } catch (RuntimeException e) {
            mine.result().completeExceptionally(e);
            throw e;
        } finally {
            inFlight.remove(requestId, mine);
        }
    }

    private MutationReply awaitDuplicate(InFlight first, Admission admission) {
        try {
            return first.result()
                    .get(admission.remaining().toNanos(), TimeUnit.NANOSECONDS)
                    .asReplay();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new IllegalStateException(e.getCause());
        } catch (TimeoutException e) {
            throw new GatewayException(
                    ErrorReason.SANDBOX_BUSY,
                    "the first request with this request_id did not finish within the deadline; retry to get its"
                            + " result");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GatewayException(ErrorReason.SANDBOX_BUSY, "interrupted while waiting for a duplicate request");
        }
    }

    private MutationReply run(Admission admission, Function<Admission, MutationReply> body) {
        try {
            return body.apply(admission);
        } catch (GatewayException e) {
            if (!admission.recorded
                    && recordable(e.reason())
                    && admission.meta.requestId().isPresent()) {
                recordFailure(admission, e);
            }
            throw e;
        }
    }

    /** Definitive answers are recorded for replays; bad input, busy sandboxes and pending transitions are not. */
    private static boolean recordable(ErrorReason reason) {
        return switch (reason) {
            case SANDBOX_NOT_FOUND,
                    SANDBOX_ALREADY_EXISTS,
                    SANDBOX_ID_MISMATCH,
                    STALE_EXECUTION,
                    EXECUTION_TOKEN_INVALID,
                    POLICY_FROZEN,
                    STATIC_POLICY_CHANGE_REQUIRES_STOP,
                    REVISION_MISMATCH,
                    DRIVER_CAPABILITY_MISSING,
                    RUNTIME_MISSING,
                    RUNTIME_CONFLICT,
                    RUNTIME_ALREADY_EXISTS,
                    TRANSITION_CANCELLED,
                    DRIVER_INTERNAL -> true;
            case INVALID_FIELD,
                    REQUEST_ID_REUSED,
                    OPERATION_NOT_FOUND,
                    SANDBOX_BUSY,
                    TRANSITION_PENDING,
                    DRIVER_UNAVAILABLE,
                    DRIVER_ABORTED,
                    WATCH_OVERFLOW,
                    GATEWAY_SHUTTING_DOWN,
                    UNAUTHENTICATED,
                    PERMISSION_DENIED,
                    INTERNAL -> false;
        };
    }

    private void recordFailure(Admission admission, GatewayException e) {
        String requestId = admission.meta.requestId().orElseThrow();
        Instant now = now();
        store.write(tx -> {
            if (tx.request(requestId).isEmpty()) {
                tx.insertRequest(new RequestRecord(
                        requestId,
                        admission.method,
                        admission.meta.fingerprint(),
                        Optional.ofNullable(admission.sandboxId),
                        admission.generation,
                        Optional.of(RequestResult.failure(
                                ErrorRecord.of(e), Optional.ofNullable(admission.sandboxId), admission.generation)),
                        now,
                        Optional.of(now),
                        admission.meta.principal()));
            }
            return null;
        });
    }

    private MutationReply replay(RequestRecord record, Admission admission) {
        // Another principal's request id answers as any reused id does: nothing of the original.
        if (!record.method().equals(admission.method)
                || !record.fingerprint().equals(admission.meta.fingerprint())
                || !record.principal().equals(admission.meta.principal())) {
            throw reused(record.requestId());
        }
        if (record.result().isEmpty()) {
            // Its transition is pending (a timed-out driver call, or recovery has not reached it): finish it now.
            String sandboxId = record.sandboxId().orElseThrow();
            try (SandboxLocks.Held held = locks.acquire(sandboxId, admission.remaining())) {
                completePending(sandboxId, Commands.Target.byId(sandboxId));
            } catch (GatewayException e) {
                if (e.reason() != ErrorReason.SANDBOX_NOT_FOUND) {
                    throw e;
                }
            }
            String requestId = record.requestId();
            record = store.read(tx -> tx.request(requestId)).orElseThrow();
            if (record.result().isEmpty()) {
                throw new GatewayException(
                        ErrorReason.TRANSITION_PENDING,
                        "the request is recorded and its transition is still pending; retry later");
            }
        }
        RequestResult result = record.result().get();
        if (result.error().isPresent()) {
            throw result.error().get().toException();
        }
        return replyFrom(result).asReplay();
    }

    /** The answer a result records; for results recorded before answers were kept, the sandbox as it is now. */
    private MutationReply replyFrom(RequestResult result) {
        if (result.sandbox().isPresent()) {
            return new MutationReply(
                    Outcome.valueOf(result.outcome()),
                    result.sandboxId(),
                    result.generation(),
                    result.sandbox(),
                    result.revision(),
                    false);
        }
        Optional<SandboxRecord> sandbox = result.sandboxId().flatMap(store::sandbox);
        Optional<PolicyRevisionRecord> revision = Optional.empty();
        if (result.policyRevision() > 0 && sandbox.isPresent()) {
            revision = store.read(tx -> tx.policyRevision(sandbox.get().id(), result.policyRevision()));
        }
        return new MutationReply(
                Outcome.valueOf(result.outcome()), result.sandboxId(), result.generation(), sandbox, revision, false);
    }

    private static GatewayException reused(String requestId) {
        return new GatewayException(
                ErrorReason.REQUEST_ID_REUSED,
                "request_id " + requestId + " was used before for a different request",
                null,
                List.of(),
                Map.of("request_id", requestId));
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Targets and preconditions

    private SandboxRecord resolve(Commands.Target target) {
        if (target.id().isPresent()) {
            Optional<SandboxRecord> row = store.sandbox(target.id().get());
            if (row.isPresent()) {
                verifyLocators(target, row.get());
                return row.get();
            }
        }
        return store.read(tx -> resolveIn(tx, target));
    }

    private SandboxRecord resolveIn(StoreTransaction tx, Commands.Target target) {
        if (target.id().isPresent()) {
            String id = target.id().get();
            Optional<SandboxRecord> row = tx.sandbox(id);
            if (row.isPresent()) {
                verifyLocators(target, row.get());
                return row.get();
            }
            if (target.workspace().isPresent()) {
                Optional<SandboxRecord> byName =
                        tx.sandboxByName(target.workspace().get(), target.name().get());
                if (byName.isPresent()) {
                    throw GatewayException.withMismatch(
                            ErrorReason.SANDBOX_ID_MISMATCH,
                            target.workspace().get() + "/" + target.name().get() + " is sandbox "
                                    + byName.get().id() + ", not " + id + "; the id is authoritative",
                            new Mismatch(Mismatch.SANDBOX_ID, id, byName.get().id()));
                }
            }
            throw notFound(target);
        }
        return tx.sandboxByName(target.workspace().get(), target.name().get()).orElseThrow(() -> notFound(target));
    }

    private SandboxRecord reread(StoreTransaction tx, Commands.Target target, String id) {
        SandboxRecord row = tx.sandbox(id).orElseThrow(() -> notFound(target));
        verifyLocators(target, row);
        return row;
    }

    private static void verifyLocators(Commands.Target target, SandboxRecord row) {
        if (target.workspace().isEmpty()) {
            return;
        }
        List<Mismatch> mismatches = new ArrayList<>();
        if (!target.workspace().get().equals(row.workspace())) {
            mismatches.add(new Mismatch(Mismatch.WORKSPACE, target.workspace().get(), row.workspace()));
        }
        if (!target.name().get().equals(row.name())) {
            mismatches.add(new Mismatch(Mismatch.NAME, target.name().get(), row.name()));
        }
        if (!mismatches.isEmpty()) {
            throw new GatewayException(
                    ErrorReason.SANDBOX_ID_MISMATCH,
                    "sandbox " + row.id() + " is " + row.workspace() + "/" + row.name() + ", not "
                            + target.workspace().get() + "/" + target.name().get() + "; the id is authoritative",
                    null,
                    mismatches,
                    Map.of("sandbox_id", row.id()));
        }
    }

    private static GatewayException notFound(Commands.Target target) {
        String what = target.id().isPresent()
                ? "sandbox " + target.id().get()
                : "sandbox " + target.workspace().get() + "/" + target.name().get();
        return new GatewayException(ErrorReason.SANDBOX_NOT_FOUND, what + " does not exist");
    }

    private Optional<ExecutionTokens.Claim> verifyToken(Optional<Commands.Precondition> precondition) {
        return precondition
                .flatMap(Commands.Precondition::expectedToken)
                .map(token -> tokens.verify("precondition.expected_execution_token", token));
    }

    /** Checks, in this order, the expected sandbox id, then the token's sandbox and generation. */
    private static void checkPrecondition(
            Optional<Commands.Precondition> precondition, Optional<ExecutionTokens.Claim> claim, SandboxRecord row) {
        if (precondition.isEmpty()) {
            return;
        }
        Optional<String> expectedId = precondition.get().expectedSandboxId();
        if (expectedId.isPresent() && !expectedId.get().equals(row.id())) {
            throw GatewayException.withMismatch(
                    ErrorReason.SANDBOX_ID_MISMATCH,
                    "the target is sandbox " + row.id() + ", not the expected " + expectedId.get(),
                    new Mismatch(Mismatch.SANDBOX_ID, expectedId.get(), row.id()));
        }
        if (claim.isPresent()) {
            ExecutionTokens.Claim c = claim.get();
            if (!c.sandboxId().equals(row.id())) {
                throw GatewayException.withMismatch(
                        ErrorReason.STALE_EXECUTION,
                        "the execution token belongs to another sandbox (" + c.sandboxId() + "), not " + row.id()
                                + "; it may have been deleted and its name reused",
                        new Mismatch(Mismatch.SANDBOX_ID, c.sandboxId(), row.id()));
            }
            if (c.generation() != row.generation()) {
                throw GatewayException.withMismatch(
                        ErrorReason.STALE_EXECUTION,
                        "the execution token names generation " + c.generation() + " of sandbox " + row.id()
                                + ", but its current execution is generation " + row.generation(),
                        new Mismatch(
                                Mismatch.GENERATION, Long.toString(c.generation()), Long.toString(row.generation())));
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Helpers

    private record Decision(SandboxRecord row, boolean isDone) {
        static Decision done(SandboxRecord row) {
            return new Decision(row, true);
        }

        static Decision proceed(SandboxRecord row) {
            return new Decision(row, false);
        }
    }

    private static boolean isRunning(SandboxRecord row) {
        return row.phase() == SandboxPhase.READY || row.phase() == SandboxPhase.PROVISIONING;
    }

    private static boolean hasCondition(SandboxRecord row, String type) {
        return row.conditions().stream().anyMatch(c -> c.type().equals(type));
    }

    private PendingTransition pending(TransitionKind kind, Admission admission, long expectedGeneration, Instant now) {
        return new PendingTransition(
                kind, UUID.randomUUID().toString(), admission.meta.requestId(), expectedGeneration, now);
    }

    private static OptionalLong expected(PendingTransition transition) {
        return transition.expectedGeneration() > 0
                ? OptionalLong.of(transition.expectedGeneration())
                : OptionalLong.empty();
    }

    private LaunchInput launchInput(SandboxRecord row) {
        PolicyRevisionRecord policy = committedRevision(row.id(), row.launchRevision());
        return new LaunchInput(
                row.generation(),
                PolicyDocument.fromCanonical(policy.document()).toLaunchPolicy(policy.revision()));
    }

    private static PolicyRevisionRecord revision(StoreTransaction tx, String sandboxId, long revision) {
        return tx.policyRevision(sandboxId, revision).orElseThrow(() -> missingRevision(sandboxId, revision));
    }

    /** A committed revision outside any transaction; revisions never change, so the store may answer from memory. */
    private PolicyRevisionRecord committedRevision(String sandboxId, long revision) {
        return store.policyRevision(sandboxId, revision).orElseThrow(() -> missingRevision(sandboxId, revision));
    }

    private static IllegalStateException missingRevision(String sandboxId, long revision) {
        return new IllegalStateException("policy revision " + revision + " of " + sandboxId + " is missing");
    }

    /** Asks the driver to check a launch without touching its backend (so without a timeout or a thread hop). */
    private void validateWithDriver(SandboxSpec spec, LaunchInput input) {
        try {
            driver.validate(spec, input);
        } catch (DriverException e) {
            throw GatewayException.fromDriver(e);
        } catch (RuntimeException e) {
            throw GatewayException.fromDriver(new DriverException(
                    DriverErrorCode.INTERNAL, "driver " + driverName + " failed to validate: " + e, e));
        }
    }

    /**
     * Runs {@code work}, a lifecycle call made for one client call on this thread, so that the driver calls of its
     * transitions run on this thread too, without handing them to a driver-call thread and waiting for it. If such a
     * driver call has not answered within the driver timeout, {@code overdue} is called once, from another thread, with
     * the {@code TRANSITION_PENDING} failure the client is owed at the timeout; the driver call goes on holding the
     * sandbox's lock, and its result is committed when it comes (a retry with the request_id gets it). Whatever {@code
     * work} returns or throws after {@code overdue} was called is for nobody: the caller decides which answer is sent.
     */
    public <T> T answering(Consumer<GatewayException> overdue, Supplier<T> work) {
        requireNonNull(overdue, "overdue is null");
        Consumer<GatewayException> outer = OVERDUE.get();
        OVERDUE.set(overdue);
        try {
            return work.get();
        } finally {
            if (outer == null) {
                OVERDUE.remove();
            } else {
                OVERDUE.set(outer);
            }
        }
    }

    /**
     * A transition's driver call: on this thread if it serves a client call through {@link #answering}, else (recovery,
     * background retries) handed to a driver-call thread with the timeout.
     */
    private <T> T transitionCall(SandboxRecord row, PendingTransition transition, Callable<T> work) {
        Consumer<GatewayException> overdue = OVERDUE.get();
        if (overdue == null) {
            return call(work);
        }
        OverdueWatch watch = new OverdueWatch(
                System.nanoTime() + settings.driverTimeout().toNanos(),
                overdue,
                () -> transitionPending(
                        row,
                        transition,
                        "driver " + driverName + " did not answer within " + settings.driverTimeout()
                                + "; its call goes on"));
        watched.add(watch);
        try {
            return work.call();
        } catch (DriverException e) {
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "interrupted while calling the driver");
        } catch (Throwable e) {
            if (e instanceof VirtualMachineError fatal) {
                throw fatal;
            }
            throw driverFailed(e);
        } finally {
            watched.remove(watch);
        }
    }

    /** A driver call that threw something other than a {@link DriverException}: the driver's own failure. */
    private DriverException driverFailed(Throwable cause) {
        return new DriverException(
                DriverErrorCode.INTERNAL,
                "driver " + driverName + " failed: " + cause.getClass().getSimpleName(),
                cause);
    }

    /** Tells the callers of driver calls that overran the driver timeout that their transitions are pending. */
    private void answerOverdue() {
        long now = System.nanoTime();
        for (OverdueWatch watch : watched) {
            if (now - watch.deadlineNanos >= 0 && watched.remove(watch)) {
                // Nothing may escape: an exception would end this periodic task.
                try {
                    GatewayException pending = watch.pending.get();
                    log.warn("{}; the caller is told so now", pending.getMessage());
                    watch.overdue.accept(pending);
                } catch (RuntimeException e) {
                    log.warn("answering the caller of an overdue driver call failed", e);
                }
            }
        }
    }

    /**
     * Runs a driver call on a driver-call thread and waits for it up to the driver timeout. A late answer is ignored;
     * the transition stays pending.
     */
    private <T> T call(Callable<T> work) {
        Future<T> future = driverCalls.submit(work);
        try {
            return future.get(settings.driverTimeout().toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof DriverException driverException) {
                throw driverException;
            }
            throw driverFailed(e.getCause());
        } catch (TimeoutException e) {
            throw new DriverException(
                    DriverErrorCode.DEADLINE_EXCEEDED,
                    "driver " + driverName + " did not answer within " + settings.driverTimeout());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "interrupted while waiting for the driver");
        }
    }

    private static SandboxPhase launchPhase(SandboxState state) {
        return switch (state) {
            case RUNNING -> SandboxPhase.READY;
            case PROVISIONING, UNKNOWN -> SandboxPhase.PROVISIONING;
            case STOPPING -> SandboxPhase.READY;
            case STOPPED -> SandboxPhase.STOPPED;
            case FAILED -> SandboxPhase.ERROR;
        };
    }

    private MutationReply reply(Outcome outcome, SandboxRecord sandbox) {
        return new MutationReply(
                outcome,
                Optional.of(sandbox.id()),
                sandbox.generation(),
                Optional.of(sandbox),
                Optional.empty(),
                false);
    }

    private void publish(SandboxChange.Type type, SandboxRecord sandbox, Observation observation) {
        hub.publish(new SandboxChange(type, sandbox, observation, true));
    }

    /** The gateway's own view of the current execution, for changes the gateway made. */
    private static Observation currentObservation(SandboxRecord sandbox) {
        return new Observation(
                sandbox.generation(), sandbox.runtimeState(), sandbox.runtimeDetail(), sandbox.updateTime(), "");
    }

    private static Observation observationOf(SandboxObservation o, Instant now) {
        return new Observation(o.generation(), o.state().name(), o.detail(), now, "");
    }

    private static String verb(TransitionKind kind) {
        return switch (kind) {
            case CREATE -> "create";
            case STOP -> "stop";
            case START -> "start";
            case DELETE -> "delete";
        };
    }

    private void logTransition(SandboxRecord row, PendingTransition t, String outcome, long startedNanos) {
        logTransition(row, t, outcome, startedNanos, Optional.empty());
    }

    private void logTransition(
            SandboxRecord row, PendingTransition t, String outcome, long startedNanos, Optional<String> cause) {
        TransitionLog.record(observer, row, t, verb(t.kind()), outcome, cause, startedNanos);
    }

    private void logNoop(String op, SandboxRecord row, Outcome outcome, Optional<String> requestId) {
        TransitionLog.record(observer, row, op, "-", outcome.name(), Optional.empty(), Optional.empty(), requestId, 0);
    }

    private void pruneRequestsQuietly() {
        try {
            Instant cutoff = now().minus(settings.requestRetention());
            int pruned = pruneRequests(cutoff);
            if (pruned > 0) {
                log.info("pruned {} request records completed before {}", pruned, cutoff);
            }
        } catch (RuntimeException e) {
            log.warn("pruning request records failed", e);
        }
    }

    /**
     * Removes idempotency records of requests that finished before {@code cutoff}, {@link #PRUNE_BATCH} per write
     * transaction, so that lifecycle writes go on between the batches however many records have aged.
     */
    public int pruneRequests(Instant cutoff) {
        int pruned = 0;
        int batch;
        do {
            batch = store.write(tx -> tx.pruneRequests(cutoff, PRUNE_BATCH));
            pruned += batch;
        } while (batch == PRUNE_BATCH);
        return pruned;
    }

    /**
     * Now, at the precision the store keeps (milliseconds): every time the gateway records, and so answers, is the
     * same in the first answer, its replay and every later read.
     */
    private Instant now() {
        return clock.instant().truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
    }

    private static Duration min(Duration a, Duration b) {
        Duration result = a.compareTo(b) <= 0 ? a : b;
        return result.isZero() ? Duration.ofSeconds(1) : result;
    }

    private static ThreadFactory daemonThreads(String prefix) {
        AtomicInteger count = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, prefix + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }

    /** Stops the driver subscription and background work. Leaves every sandbox and the driver as they are. */
    @Override
    public void close() {
        closed = true;
        WatchSubscription subscription = driverWatch;
        if (subscription != null) {
            subscription.close();
        }
        scheduler.shutdownNow();
        watchdog.shutdownNow();
        driverCalls.shutdown();
        try {
            if (!driverCalls.awaitTermination(5, TimeUnit.SECONDS)) {
                driverCalls.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            driverCalls.shutdownNow();
        }
    }
}
