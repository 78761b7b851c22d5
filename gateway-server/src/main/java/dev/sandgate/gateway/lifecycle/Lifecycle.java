package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.api.ApiMethod;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.lifecycle.RequestLedger.Admission;
import dev.sandgate.gateway.lifecycle.Transitions.Decision;
import dev.sandgate.gateway.metrics.GatewayObserver;
import dev.sandgate.gateway.store.NameTakenException;
import dev.sandgate.gateway.store.PendingTransition;
import dev.sandgate.gateway.store.PolicyRevisionRecord;
import dev.sandgate.gateway.store.SandboxFilter;
import dev.sandgate.gateway.store.SandboxPhase;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.gateway.store.StoreTransaction.SandboxKey;
import dev.sandgate.gateway.store.TransitionKind;
import dev.sandgate.gateway.token.ExecutionTokens;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.SandboxObservation;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's lifecycle: one method per operation, each reading top-down. Every mutating operation follows the same
 * shape: validate (nothing written on bad input); {@linkplain RequestLedger admit} the request (an earlier request
 * with its request_id is replayed); verify the execution token and {@linkplain Targets resolve} the target once; take
 * the sandbox's {@linkplain RequestLedger.SandboxLocks lock} within the caller's deadline; then, in ONE store transaction that first
 * finishes any pending transition ({@link Transitions#writeSettled}), re-read the sandbox by id, check the target and
 * the precondition and record the intent with the request record. Only then is the driver called ({@link
 * Transitions#drive}, through {@link DriverCalls}, bounded by the driver timeout); its result is committed with the
 * request's result in one more transaction. The {@link Reconciler} finishes in the background what a crash or an
 * unavailable driver left pending, and applies the driver's own events.
 *
 * <p>Threading: all public methods may be called concurrently. The driver calls of a client call run on the client
 * call's thread when its {@link CallDeadline} says who to tell when one is overdue; otherwise (and for recovery and
 * retries) on driver-call threads.
 */
public final class Lifecycle implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Lifecycle.class);

    private final Store store;
    private final String driverName;
    private final DriverCapabilities capabilities;
    private final ExecutionTokens tokens;
    private final WatchHub hub = new WatchHub();
    private final FaultInjector faults;
    private final Clock clock;
    private final RequestLedger.SandboxLocks locks;
    private final Targets targets;
    private final PolicyRules rules;
    private final DriverCalls calls;
    private final Transitions transitions;
    private final RequestLedger ledger;
    private final Reconciler reconciler;
    private final Leases leases;
    private final PolicyUpdates policies;
    private final Expiry expiry;
    private final Execs execs;
    private volatile GatewayObserver observer = GatewayObserver.NONE;

    public Lifecycle(
            Store store,
            ComputeDriver driver,
            String driverName,
            ExecutionTokens tokens,
            FaultInjector faults,
            Clock clock,
            LifecycleSettings settings) {
        this(store, driver, driverName, tokens, faults, clock, settings, ReplicaCoordination.single());
    }

    /**
     * A lifecycle that shares its store with other gateway replicas through {@code coordination}: each sandbox's lock
     * also takes the sandbox's lease, and the writes of a sandbox are fenced by it ({@link ReplicaCoordination}).
     */
    public Lifecycle(
            Store store,
            ComputeDriver driver,
            String driverName,
            ExecutionTokens tokens,
            FaultInjector faults,
            Clock clock,
            LifecycleSettings settings,
            ReplicaCoordination coordination) {
        requireNonNull(coordination, "coordination is null");
        this.store = coordination.fence(requireNonNull(store, "store is null"));
        store = this.store;
        this.locks = new RequestLedger.SandboxLocks(coordination);
        requireNonNull(driver, "driver is null");
        this.driverName = requireNonNull(driverName, "driverName is null");
        this.capabilities = requireNonNull(driver.capabilities(), "driver capabilities are null");
        this.tokens = requireNonNull(tokens, "tokens is null");
        this.faults = requireNonNull(faults, "faults is null");
        this.clock = requireNonNull(clock, "clock is null");
        requireNonNull(settings, "settings is null");
        this.targets = new Targets(store, tokens);
        this.rules = new PolicyRules(driver, driverName, capabilities);
        this.calls = new DriverCalls(driverName, settings.driverTimeout());
        // Retries are the reconciler's, which needs the transitions first: the hook reads the field when it is called.
        this.transitions = new Transitions(
                store,
                driver,
                driverName,
                calls,
                faults,
                hub,
                clock,
                this::observer,
                id -> reconciler().retryLater(id));
        this.ledger = new RequestLedger(store, targets, locks, transitions, clock);
        this.reconciler =
                new Reconciler(store, driver, locks, transitions, ledger, hub, clock, settings, this::observer);
        this.leases = new Leases(ledger, locks, transitions, tokens, hub, clock);
        this.policies = new PolicyUpdates(store, ledger, locks, transitions, rules, hub, clock);
        this.expiry = new Expiry(store, this, locks, tokens, hub, clock, settings.defaultWait());
        this.execs = new Execs(store, driver, capabilities, tokens, targets, clock);
    }

    /** The expiry loop (for tests in this package). */
    Expiry expiry() {
        return expiry;
    }

    /** Exec and logs, pinned to one execution (they take no lifecycle lock while they run). */
    public Execs execs() {
        return execs;
    }

    private Reconciler reconciler() {
        return reconciler;
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
        return reconciler.unmanagedResources();
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Reads

    /** The sandbox the target names. NOT_FOUND or SANDBOX_ID_MISMATCH otherwise. */
    public SandboxRecord get(Commands.Target target) {
        return targets.resolve(target);
    }

    /** One page of sandboxes after {@code after}, and whether more follow. */
    public record Page(List<SandboxRecord> sandboxes, boolean more) {}

    public Page list(SandboxFilter filter, Optional<SandboxKey> after, int limit) {
        List<SandboxRecord> rows = store.read(tx -> tx.listSandboxes(filter, after, limit + 1));
        boolean more = rows.size() > limit;
        return new Page(more ? rows.subList(0, limit) : rows, more);
    }

    public PolicyView policy(Commands.Target target) {
        SandboxRecord sandbox = targets.resolve(target);
        return store.read(tx -> new PolicyView(
                sandbox,
                Transitions.revision(tx, sandbox.id(), sandbox.admittedRevision()),
                Transitions.revision(tx, sandbox.id(), sandbox.launchRevision())));
    }

    /** An earlier request by its request id; OPERATION_NOT_FOUND if none is recorded. */
    public OperationView operation(String requestId) {
        return operation(requestId, "");
    }

    /** An earlier request of {@code principal}; OPERATION_NOT_FOUND if none is recorded, or another's. */
    public OperationView operation(String requestId, String principal) {
        return ledger.operation(requestId, principal);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Mutations (each also with a plain wait: its driver calls then run on driver-call threads)

    public MutationReply create(Commands.Create c, Duration maxWait) {
        return create(c, CallDeadline.waiting(maxWait));
    }

    public MutationReply stop(Commands.Stop c, Duration maxWait) {
        return stop(c, CallDeadline.waiting(maxWait));
    }

    public MutationReply start(Commands.Start c, Duration maxWait) {
        return start(c, CallDeadline.waiting(maxWait));
    }

    public MutationReply delete(Commands.Delete c, Duration maxWait) {
        return delete(c, CallDeadline.waiting(maxWait));
    }

    public MutationReply updatePolicy(Commands.UpdatePolicy c, Duration maxWait) {
        return updatePolicy(c, CallDeadline.waiting(maxWait));
    }

    public MutationReply renewLease(Commands.RenewLease c, Duration maxWait) {
        return renewLease(c, CallDeadline.waiting(maxWait));
    }

    /** Renews the idle lease of the execution the token names; see {@link Leases}. */
    public MutationReply renewLease(Commands.RenewLease c, CallDeadline deadline) {
        return leases.renew(c, deadline);
    }

    public MutationReply create(Commands.Create c, CallDeadline deadline) {
        return ledger.admit(ApiMethod.CREATE_SANDBOX, c.meta(), null, deadline, adm -> {
            LaunchPolicy launchPolicy = c.policy().toLaunchPolicy(1);
            rules.validate(c.spec().toSpi(c.labels()), new LaunchInput(1, launchPolicy));
            String id = Identifiers.newSandboxId();
            try (RequestLedger.SandboxLocks.Held held = locks.acquire(id, adm.remaining())) {
                SandboxRecord intent = recordCreate(c, id, adm, now());
                adm.committed(id, 1);
                publish(SandboxChange.Type.ADDED, intent);
                faults.reached(FaultPoint.CREATE_AFTER_INTENT);
                MutationReply reply =
                        transitions.drive(intent, false, Optional.of(new LaunchInput(1, launchPolicy)), adm.deadline());
                return c.waitUntilReady() ? adm.recordAnswer(reply, awaitReady(reply, adm.remaining())) : reply;
            }
        });
    }

    public MutationReply stop(Commands.Stop c, CallDeadline deadline) {
        return ledger.admit(ApiMethod.STOP_SANDBOX, c.meta(), c.target(), deadline, adm -> {
            Optional<ExecutionTokens.Claim> claim = targets.verifyToken(c.precondition());
            SandboxRecord resolved = adm.resolved(c.target());
            try (RequestLedger.SandboxLocks.Held held = locks.acquire(resolved.id(), adm.remaining())) {
                Decision decision = recordStop(c, resolved.id(), claim, adm, now());
                adm.committed(decision.row().id(), decision.row().generation());
                if (decision instanceof Decision.Done(SandboxRecord row)) {
                    transitions.logNoop("stop", row, Outcome.ALREADY_STOPPED, adm.requestId());
                    return Transitions.reply(Outcome.ALREADY_STOPPED, row);
                }
                publish(SandboxChange.Type.MODIFIED, decision.row());
                faults.reached(FaultPoint.STOP_AFTER_INTENT);
                return transitions.drive(decision.row(), false, Optional.empty(), adm.deadline());
            }
        });
    }

    public MutationReply start(Commands.Start c, CallDeadline deadline) {
        return ledger.admit(ApiMethod.START_SANDBOX, c.meta(), c.target(), deadline, adm -> {
            SandboxRecord resolved = adm.resolved(c.target());
            try (RequestLedger.SandboxLocks.Held held = locks.acquire(resolved.id(), adm.remaining())) {
                Transitions.StartPlan plan = transitions.planStart(resolved.id(), c.target(), adm.deadline());
                Optional<LaunchInput> launch = plan.policy().map(policy -> rules.launchOnStart(plan.row(), policy));
                Decision decision = recordStart(c, plan, resolved.id(), adm, now());
                adm.committed(decision.row().id(), decision.row().generation());
                if (decision instanceof Decision.Done || launch.isEmpty()) {
                    transitions.logNoop("start", decision.row(), Outcome.ALREADY_RUNNING, adm.requestId());
                    return Transitions.reply(Outcome.ALREADY_RUNNING, decision.row());
                }
                publish(SandboxChange.Type.MODIFIED, decision.row());
                faults.reached(FaultPoint.START_AFTER_INTENT);
                MutationReply reply = transitions.drive(decision.row(), false, launch, adm.deadline());
                return c.waitUntilReady() ? adm.recordAnswer(reply, awaitReady(reply, adm.remaining())) : reply;
            }
        });
    }

    public MutationReply delete(Commands.Delete c, CallDeadline deadline) {
        return ledger.admit(ApiMethod.DELETE_SANDBOX, c.meta(), c.target(), deadline, adm -> {
            Optional<ExecutionTokens.Claim> claim = targets.verifyToken(c.precondition());
            try {
                SandboxRecord resolved = adm.resolved(c.target());
                try (RequestLedger.SandboxLocks.Held held = locks.acquire(resolved.id(), adm.remaining())) {
                    SandboxRecord intent = recordDelete(c, resolved.id(), claim, adm, now());
                    adm.committed(intent.id(), intent.generation());
                    publish(SandboxChange.Type.MODIFIED, intent);
                    faults.reached(FaultPoint.DELETE_AFTER_INTENT);
                    return transitions.drive(intent, false, Optional.empty(), adm.deadline());
                }
            } catch (GatewayException e) {
                if (e.reason() != ErrorReason.SANDBOX_NOT_FOUND || !c.allowMissing()) {
                    throw e;
                }
                return nothingDeleted(c, adm);
            }
        });
    }

    /** Admits a policy revision for later executions; see {@link PolicyUpdates}. */
    public MutationReply updatePolicy(Commands.UpdatePolicy c, CallDeadline deadline) {
        return policies.update(c, deadline);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // The steps of the mutations

    /** Records a create's intent: the sandbox (PROVISIONING, generation 1), its first policy revision, the request. */
    private SandboxRecord recordCreate(Commands.Create c, String id, Admission adm, Instant now) {
        try {
            return store.write(tx -> {
                PendingTransition pending = adm.intent(TransitionKind.CREATE, 1, now);
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
                        now,
                        c.expiry(),
                        c.expiry().map(e -> e.leaseFor(1, now))));
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
    }

    /** Records a stop's intent (STOPPING), unless the sandbox is already stopped: then the request is done. */
    private Decision recordStop(
            Commands.Stop c, String id, Optional<ExecutionTokens.Claim> claim, Admission adm, Instant now) {
        return transitions.writeSettled(c.target(), id, adm.deadline(), (tx, row) -> {
            Targets.checkPrecondition(c.precondition(), claim, row);
            if (row.phase() == SandboxPhase.STOPPED
                    || (row.phase() == SandboxPhase.ERROR && row.runtimeGeneration() == 0)) {
                adm.recordDone(tx, Outcome.ALREADY_STOPPED, row, null, now);
                return new Decision.Done(row);
            }
            SandboxRecord intent = tx.updateSandbox(row.toBuilder()
                    .phase(SandboxPhase.STOPPING)
                    .pending(Optional.of(adm.intent(TransitionKind.STOP, row.runtimeGeneration(), now)))
                    .updateTime(now)
                    .build());
            adm.recordPending(tx, row.id(), row.generation());
            return new Decision.Proceed(intent);
        });
    }

    /**
     * Records a start's intent (STARTING, the next generation claimed with the policy revision {@code plan} captured),
     * unless the sandbox runs: then the request is done.
     */
    private Decision recordStart(Commands.Start c, Transitions.StartPlan plan, String id, Admission adm, Instant now) {
        SandboxRecord row = plan.row();
        long revision = plan.policy().map(PolicyRevisionRecord::revision).orElse(0L);
        String digest = plan.policy().map(PolicyRevisionRecord::digest).orElse("");
        return store.write(tx -> {
            SandboxRecord current = Targets.reread(tx, c.target(), id);
            if (Transitions.isRunning(current)) {
                adm.recordDone(tx, Outcome.ALREADY_RUNNING, current, null, now);
                return new Decision.Done(current);
            }
            if (current.generation() != row.generation() || current.admittedRevision() != row.admittedRevision()) {
                throw new IllegalStateException("sandbox " + row.id() + " changed while its lock was held");
            }
            long generation = current.generation() + 1;
            SandboxRecord intent = tx.updateSandbox(current.toBuilder()
                    .claim(generation, revision, digest, now)
                    .phase(SandboxPhase.STARTING)
                    .pending(Optional.of(adm.intent(TransitionKind.START, generation, now)))
                    .updateTime(now)
                    .build());
            adm.recordPending(tx, current.id(), generation);
            return new Decision.Proceed(intent);
        });
    }

    /**
     * Records a delete's intent, after any pending stop or delete finished. A pending create or start is cancelled
     * here, in the delete's own transaction; the delete then removes whatever carries the id, of any generation it
     * may have reached.
     */
    private SandboxRecord recordDelete(
            Commands.Delete c, String id, Optional<ExecutionTokens.Claim> claim, Admission adm, Instant now) {
        return transitions.writeSettled(c.target(), id, adm.deadline(), Superseding::finishBeforeDelete, (tx, row) -> {
            Targets.checkPrecondition(c.precondition(), claim, row);
            PendingTransition delete =
                    adm.intent(TransitionKind.DELETE, row.pending().isPresent() ? 0 : row.runtimeGeneration(), now);
            row.pending()
                    .ifPresent(cancelled -> Transitions.complete(
                            tx, cancelled, Superseding.cancelledResult(row, cancelled, delete.operationId()), now));
            SandboxRecord updated = tx.updateSandbox(row.toBuilder()
                    .phase(SandboxPhase.DELETING)
                    .pending(Optional.of(delete))
                    .updateTime(now)
                    .build());
            adm.recordPending(tx, row.id(), row.generation());
            return updated;
        });
    }

    /** A delete with allow_missing of a sandbox that does not exist: recorded as NOTHING_DELETED. */
    private MutationReply nothingDeleted(Commands.Delete c, Admission adm) {
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

    /** {@code reply} with the sandbox as it is once it no longer awaits its launch, or after {@code maxWait}. */
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

    private static boolean awaitingLaunch(SandboxRecord sandbox) {
        return sandbox.phase() == SandboxPhase.PROVISIONING || sandbox.phase() == SandboxPhase.STARTING;
    }

    /** Streams a change the gateway made to {@code sandbox}, with the gateway's view of its current execution. */
    private void publish(SandboxChange.Type type, SandboxRecord sandbox) {
        hub.publish(new SandboxChange(type, sandbox, Transitions.currentObservation(sandbox), true));
    }

    private Instant now() {
        return Transitions.now(clock);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Background work

    /**
     * Completes every transition left pending (by a crash or a timed-out driver call) with its committed input, then
     * reconciles the store against the driver's list and subscribes to the driver's events, then starts the expiry
     * loop (which acts at once on every lease that fell due while the gateway was down). Call once, before serving.
     */
    public void recover() {
        reconciler.recover();
        expiry.start();
    }

    /**
     * Finishes, in the background, every transition left pending by a replica that no longer holds its sandbox's
     * lease (it died mid-call): each is retried as a timed-out call's is, and waits for the sandbox's lease first. Then
     * rescans the expiry leases, which other replicas may have armed. The leader calls it while it leads.
     */
    public void recoverOrphans() {
        for (SandboxRecord row : store.read(tx -> tx.pendingSandboxes())) {
            reconciler.retryLater(row.id());
        }
        expiry.rescan();
    }

    /**
     * Removes idempotency records of requests that finished before {@code cutoff} (and of execs admitted before it that
     * never got a result), in small write transactions, so that lifecycle writes go on between them however many
     * records have aged.
     */
    public int pruneRequests(Instant cutoff) {
        return ledger.prune(cutoff);
    }

    /** Stops the driver subscription and background work. Leaves every sandbox and the driver as they are. */
    @Override
    public void close() {
        expiry.close();
        ledger.close();
        reconciler.close();
        calls.close();
    }
}
