package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.metrics.GatewayObserver;
import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.gateway.store.ConditionRecord;
import dev.sandgate.gateway.store.ErrorRecord;
import dev.sandgate.gateway.store.PendingTransition;
import dev.sandgate.gateway.store.PolicyMode;
import dev.sandgate.gateway.store.PolicyRevisionRecord;
import dev.sandgate.gateway.store.RequestResult;
import dev.sandgate.gateway.store.SandboxPhase;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.StaleRecordException;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.gateway.store.StoreTransaction;
import dev.sandgate.gateway.store.TransitionKind;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import java.time.Clock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Drives committed transitions: calls the driver for a recorded intent and commits its result (with the result of
 * the request that recorded it) in one transaction, or leaves the intent pending for a retry when the driver was
 * unavailable. The caller holds the sandbox's lock; a transition found pending where a decision is to be made is
 * finished first ({@link #writeSettled}).
 */
final class Transitions {
    private final Store store;
    private final ComputeDriver driver;
    private final String driverName;
    private final DriverCalls calls;
    private final FaultInjector faults;
    private final WatchHub hub;
    private final Clock clock;
    private final Supplier<GatewayObserver> observer;
    private final Consumer<String> retryLater;

    /**
     * @param retryLater schedules a background retry of the transition pending on the sandbox with this id
     */
    Transitions(
            Store store,
            ComputeDriver driver,
            String driverName,
            DriverCalls calls,
            FaultInjector faults,
            WatchHub hub,
            Clock clock,
            Supplier<GatewayObserver> observer,
            Consumer<String> retryLater) {
        this.store = requireNonNull(store, "store is null");
        this.driver = requireNonNull(driver, "driver is null");
        this.driverName = requireNonNull(driverName, "driverName is null");
        this.calls = requireNonNull(calls, "calls is null");
        this.faults = requireNonNull(faults, "faults is null");
        this.hub = requireNonNull(hub, "hub is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.observer = requireNonNull(observer, "observer is null");
        this.retryLater = requireNonNull(retryLater, "retryLater is null");
    }

    /** What an operation's intent transaction decided: it is done (nothing to drive), or its intent is recorded. */
    sealed interface Decision {
        SandboxRecord row();

        record Done(SandboxRecord row) implements Decision {}

        record Proceed(SandboxRecord row) implements Decision {}
    }

    /** What a look at a sandbox under its lock found: a decision, or a pending transition to finish first. */
    sealed interface Settle<T> {
        record Decided<T>(T value) implements Settle<T> {}

        record Unsettled<T>(SandboxRecord row) implements Settle<T> {}
    }

    /** What a start needs, read in one transaction: the sandbox and, unless it runs, the policy it would launch. */
    record StartPlan(SandboxRecord row, Optional<PolicyRevisionRecord> policy) {}

    // ---------------------------------------------------------------------------------------------------------------
    // Settling: decisions under the lock, after any pending transition finished

    /**
     * Runs {@code decide} on the sandbox as stored, in one write transaction. A transition left pending (a crash, a
     * timed-out driver call) is finished first, outside that transaction, and the decision is made again on the
     * result; the transaction that found it writes nothing. Most operations find none, so this costs one transaction
     * instead of a read before the write.
     */
    <T> T writeSettled(
            Commands.Target target,
            String sandboxId,
            CallDeadline deadline,
            BiFunction<StoreTransaction, SandboxRecord, T> decide) {
        return writeSettled(target, sandboxId, deadline, pending -> true, decide);
    }

    /** {@link #writeSettled} that finishes first only the pending transitions {@code finishFirst} accepts. */
    <T> T writeSettled(
            Commands.Target target,
            String sandboxId,
            CallDeadline deadline,
            Predicate<PendingTransition> finishFirst,
            BiFunction<StoreTransaction, SandboxRecord, T> decide) {
        return settled(
                sandboxId,
                deadline,
                () -> store.write(tx -> {
                    SandboxRecord row = Targets.reread(tx, target, sandboxId);
                    return row.pending().filter(finishFirst).isPresent()
                            ? new Settle.Unsettled<T>(row)
                            : new Settle.Decided<>(decide.apply(tx, row));
                }));
    }

    /** The start plan of the sandbox as stored, after finishing a pending transition. */
    StartPlan planStart(String sandboxId, Commands.Target target, CallDeadline deadline) {
        // The row as last committed (the caller holds the sandbox's lock; the launch's commit compares its version),
        // and the revision it admits, which never changes once admitted: both may come from the store's memory.
        return settled(sandboxId, deadline, () -> {
            SandboxRecord row = store.sandbox(sandboxId).orElseThrow(() -> Targets.notFound(target));
            if (row.pending().isPresent()) {
                return new Settle.Unsettled<>(row);
            }
            if (isRunning(row)) {
                return new Settle.Decided<>(new StartPlan(row, Optional.empty()));
            }
            // LIVE launches the admitted revision; FROZEN always its creation snapshot.
            long revision = row.policyMode() == PolicyMode.FROZEN ? 1 : row.admittedRevision();
            return new Settle.Decided<>(new StartPlan(row, Optional.of(committedRevision(row.id(), revision))));
        });
    }

    /** Runs {@code look} until it decides, finishing the pending transition it found in between. */
    private <T> T settled(String sandboxId, CallDeadline deadline, Supplier<Settle<T>> look) {
        for (int attempt = 1; ; attempt++) {
            switch (look.get()) {
                case Settle.Decided<T> decided -> {
                    return decided.value();
                }
                case Settle.Unsettled<T> unsettled -> {
                    if (attempt == 3) {
                        throw new IllegalStateException("sandbox " + sandboxId + " still has a pending transition");
                    }
                    finishPending(unsettled.row(), deadline);
                }
            }
        }
    }

    /** Finishes a pending transition, if any, and returns the sandbox as it is then. */
    SandboxRecord completePending(String sandboxId, Commands.Target target, CallDeadline deadline) {
        SandboxRecord row = store.sandbox(sandboxId).orElseThrow(() -> Targets.notFound(target));
        if (row.pending().isEmpty()) {
            return row;
        }
        finishPending(row, deadline);
        return store.sandbox(sandboxId).orElseThrow(() -> Targets.notFound(target));
    }

    /** Drives the pending transition of {@code row} to its end. */
    void finishPending(SandboxRecord row, CallDeadline deadline) {
        try {
            drive(row, true, Optional.empty(), deadline);
        } catch (GatewayException e) {
            if (e.reason() == ErrorReason.TRANSITION_PENDING) {
                throw e;
            }
            // A definitive failure was recorded as that transition's own result; this operation goes on.
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Driving and committing

    /**
     * Calls the driver for a committed transition and commits its result.
     *
     * @param resumed whether this completes a transition started earlier (recovery, a retry)
     * @param committedInput the launch input of a create or start this operation has just committed, built from the
     *     very revision it committed; empty (recovery, retries): read from the committed revision
     */
    MutationReply drive(
            SandboxRecord row, boolean resumed, Optional<LaunchInput> committedInput, CallDeadline deadline) {
        PendingTransition transition = row.pending().orElseThrow();
        long started = System.nanoTime();
        SandboxRef ref = row.ref();
        try {
            return switch (transition.kind()) {
                case CREATE -> {
                    LaunchInput input = committedInput.orElseGet(() -> launchInput(row));
                    SandboxSpec spec = row.spec().toSpi(row.labels());
                    SandboxObservation o = call(row, transition, deadline, () -> driver.create(ref, spec, input))
                            .observation();
                    faults.reached(FaultPoint.CREATE_AFTER_DRIVER);
                    yield commitLaunch(row, transition, o, Outcome.CREATED, started);
                }
                case START -> {
                    LaunchInput input = committedInput.orElseGet(() -> launchInput(row));
                    SandboxObservation o = call(row, transition, deadline, () -> driver.start(ref, input))
                            .observation();
                    faults.reached(FaultPoint.START_AFTER_DRIVER);
                    yield commitLaunch(row, transition, o, Outcome.LAUNCHED, started);
                }
                case STOP -> {
                    var result = call(row, transition, deadline, () -> driver.stop(ref, expected(transition)));
                    faults.reached(FaultPoint.STOP_AFTER_DRIVER);
                    Outcome outcome = result.stoppedNow() || resumed ? Outcome.STOPPED_NOW : Outcome.ALREADY_STOPPED;
                    yield commitStopped(row, transition, result.observation(), outcome, started);
                }
                case DELETE -> {
                    call(row, transition, deadline, () -> driver.delete(ref, expected(transition)));
                    faults.reached(FaultPoint.DELETE_AFTER_DRIVER);
                    yield commitDeleted(row, transition, started);
                }
            };
        } catch (DriverException e) {
            if (GatewayException.isTransient(e.code())) {
                logTransition(row, transition, "PENDING(" + e.code() + ")", started, Optional.of(e.getMessage()));
                retryLater.accept(row.id());
                throw transitionPending(row, transition, e.getMessage());
            }
            GatewayException failure = GatewayException.fromDriver(e);
            commitFailure(row, transition, e, failure, started);
            throw failure;
        }
    }

    /** A transition's driver call, on the thread {@code deadline} says, bounded by the driver timeout. */
    private <T> T call(SandboxRecord row, PendingTransition transition, CallDeadline deadline, Callable<T> work) {
        return calls.call(
                work,
                deadline,
                () -> transitionPending(
                        row,
                        transition,
                        "driver " + driverName + " did not answer within " + calls.timeout() + "; its call goes on"));
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
        return commitObserved(
                row,
                transition,
                o,
                outcome,
                started,
                current -> current.toBuilder()
                        .phase(launchPhase(o.state()))
                        .clearCondition(ConditionRecord.RUNTIME_MISSING));
    }

    private MutationReply commitStopped(
            SandboxRecord row, PendingTransition transition, SandboxObservation o, Outcome outcome, long started) {
        return commitObserved(
                row,
                transition,
                o,
                outcome,
                started,
                current -> current.toBuilder().phase(SandboxPhase.STOPPED));
    }

    /** Commits a launch's or a stop's observation {@code o}, with the phase {@code phase} sets. */
    private MutationReply commitObserved(
            SandboxRecord row,
            PendingTransition transition,
            SandboxObservation o,
            Outcome outcome,
            long started,
            Function<SandboxRecord, SandboxRecord.Builder> phase) {
        Instant now = now();
        SandboxRecord updated = store.write(tx -> {
            SandboxRecord written = update(
                    tx,
                    row,
                    current -> phase.apply(current)
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
        logTransition(updated, transition, outcome.name(), started, Optional.empty());
        hub.publish(new SandboxChange(
                SandboxChange.Type.MODIFIED,
                updated,
                new Observation(o.generation(), o.state().name(), o.detail(), now, ""),
                true));
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
        logTransition(last, transition, Outcome.DELETED_NOW.name(), started, Optional.empty());
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
                fresh = Optional.of(calls.call(() -> driver.get(row.ref())));
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
        logTransition(updated, transition, "FAILED(" + failure.reason() + ")", started, Optional.empty());
        hub.publish(new SandboxChange(SandboxChange.Type.MODIFIED, updated, currentObservation(updated), true));
    }

    /**
     * Writes {@code change} applied to {@code expected} with a compare-and-set. While a transition is pending only the
     * lock holder writes the sandbox, so the intent row is normally still current; if not, the change is applied to
     * the stored row.
     */
    private static SandboxRecord update(
            StoreTransaction tx, SandboxRecord expected, UnaryOperator<SandboxRecord> change) {
        try {
            return tx.updateSandbox(change.apply(expected));
        } catch (StaleRecordException e) {
            return tx.updateSandbox(change.apply(tx.sandbox(expected.id()).orElseThrow()));
        }
    }

    /** Records {@code result} as the result of the request that recorded {@code transition}, if it had a request id. */
    static void complete(StoreTransaction tx, PendingTransition transition, RequestResult result, Instant now) {
        transition.requestId().ifPresent(requestId -> tx.completeRequest(requestId, result, now));
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Helpers shared with the operations

    static boolean isRunning(SandboxRecord row) {
        return row.phase() == SandboxPhase.READY || row.phase() == SandboxPhase.PROVISIONING;
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

    static PolicyRevisionRecord revision(StoreTransaction tx, String sandboxId, long revision) {
        return tx.policyRevision(sandboxId, revision).orElseThrow(() -> missingRevision(sandboxId, revision));
    }

    /** A committed revision outside any transaction; revisions never change, so the store may answer from memory. */
    PolicyRevisionRecord committedRevision(String sandboxId, long revision) {
        return store.policyRevision(sandboxId, revision).orElseThrow(() -> missingRevision(sandboxId, revision));
    }

    private static IllegalStateException missingRevision(String sandboxId, long revision) {
        return new IllegalStateException("policy revision " + revision + " of " + sandboxId + " is missing");
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

    /** The phase a runtime state means when no transition is pending. */
    static SandboxPhase phaseOf(SandboxState state) {
        return switch (state) {
            case PROVISIONING -> SandboxPhase.PROVISIONING;
            case RUNNING, STOPPING -> SandboxPhase.READY;
            case STOPPED -> SandboxPhase.STOPPED;
            case FAILED, UNKNOWN -> SandboxPhase.ERROR;
        };
    }

    static MutationReply reply(Outcome outcome, SandboxRecord sandbox) {
        return new MutationReply(
                outcome,
                Optional.of(sandbox.id()),
                sandbox.generation(),
                Optional.of(sandbox),
                Optional.empty(),
                false);
    }

    /** The gateway's own view of the current execution, for changes the gateway made. */
    static Observation currentObservation(SandboxRecord sandbox) {
        return new Observation(
                sandbox.generation(), sandbox.runtimeState(), sandbox.runtimeDetail(), sandbox.updateTime(), "");
    }

    private static String verb(TransitionKind kind) {
        return switch (kind) {
            case CREATE -> "create";
            case STOP -> "stop";
            case START -> "start";
            case DELETE -> "delete";
        };
    }

    private void logTransition(
            SandboxRecord row, PendingTransition t, String outcome, long startedNanos, Optional<String> cause) {
        TransitionLog.record(observer.get(), row, t, verb(t.kind()), outcome, cause, startedNanos);
    }

    /** Logs an operation that found nothing to do (so had no transition). */
    void logNoop(String op, SandboxRecord row, Outcome outcome, Optional<String> requestId) {
        TransitionLog.record(
                observer.get(), row, op, "-", outcome.name(), Optional.empty(), Optional.empty(), requestId, 0);
    }

    /**
     * Now, at the precision the store keeps (milliseconds): every time the gateway records, and so answers, is the
     * same in the first answer, its replay and every later read.
     */
    static Instant now(Clock clock) {
        return clock.instant().truncatedTo(ChronoUnit.MILLIS);
    }

    private Instant now() {
        return now(clock);
    }
}
