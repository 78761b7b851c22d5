package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.api.ApiMethod;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.store.ErrorRecord;
import dev.sandgate.gateway.store.PendingTransition;
import dev.sandgate.gateway.store.PolicyRevisionRecord;
import dev.sandgate.gateway.store.RequestRecord;
import dev.sandgate.gateway.store.RequestResult;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.gateway.store.StoreTransaction;
import dev.sandgate.gateway.store.TransitionKind;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * The request ledger: makes mutating requests idempotent by their request_id. A request with a request_id recorded
 * before is replayed (its recorded answer, or, while its transition is pending, that transition finished first); a
 * duplicate of a request still in flight in this process waits for its answer; a new request runs, and its request
 * record is written in the transactions of its intent and of its result, never on its own. Definitive failures are
 * recorded too, so that a replay fails the same way. With replicas, a duplicate admitted by another replica while this
 * one ran (the request_id's record appears though this request recorded nothing, its answer or its refusal) is waited
 * for and replayed.
 */
final class RequestLedger {
    /**
     * Request records removed per write transaction when pruning. Each removal rewrites a page of the request-id index
     * (the ids are random), so a batch must stay small enough not to hold up the store's single writer.
     */
    static final int PRUNE_BATCH = 100;

    /** The first and the longest pause between reads of a duplicate's request record on another replica. */
    private static final long MIN_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    private static final long MAX_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private final Store store;
    private final Targets targets;
    private final SandboxLocks locks;
    private final Transitions transitions;
    private final Clock clock;
    private final ConcurrentHashMap<String, InFlight> inFlight = new ConcurrentHashMap<>();
    private volatile boolean closed;

    RequestLedger(Store store, Targets targets, SandboxLocks locks, Transitions transitions, Clock clock) {
        this.store = requireNonNull(store, "store is null");
        this.targets = requireNonNull(targets, "targets is null");
        this.locks = requireNonNull(locks, "locks is null");
        this.transitions = requireNonNull(transitions, "transitions is null");
        this.clock = requireNonNull(clock, "clock is null");
    }

    /** One admitted request: its idempotency bookkeeping and its deadline. */
    final class Admission {
        private final ApiMethod method;
        private final Commands.RequestMeta meta;
        private final CallDeadline deadline;
        private final long deadlineNanos;
        private boolean recorded;
        private String sandboxId;
        private long generation;
        /** The target as resolved in the transaction that found no earlier request with this request_id. */
        private SandboxRecord prefetched;
        /** Or why it did not resolve. */
        private GatewayException prefetchFailure;

        private Admission(ApiMethod method, Commands.RequestMeta meta, CallDeadline deadline) {
            this.method = method;
            this.meta = meta;
            this.deadline = deadline;
            this.deadlineNanos = System.nanoTime() + deadline.maxWait().toNanos();
        }

        Optional<String> requestId() {
            return meta.requestId();
        }

        /** What is left of the request's deadline, with whom to tell when a driver call overruns the driver timeout. */
        CallDeadline deadline() {
            return new CallDeadline(remaining(), deadline.overdue());
        }

        Duration remaining() {
            return Duration.ofNanos(Math.max(0, deadlineNanos - System.nanoTime()));
        }

        /** Resolves {@code target} to the stored sandbox: once, in the request's look-up if it had one. */
        SandboxRecord resolved(Commands.Target target) {
            if (prefetchFailure != null) {
                throw prefetchFailure;
            }
            SandboxRecord row = prefetched != null ? prefetched : targets.resolve(target);
            this.sandboxId = row.id();
            this.generation = row.generation();
            return row;
        }

        /** The intent of a {@code kind} transition this request records. */
        PendingTransition intent(TransitionKind kind, long expectedGeneration, Instant now) {
            return new PendingTransition(kind, UUID.randomUUID().toString(), meta.requestId(), expectedGeneration, now);
        }

        /** Records the request as admitted and pending, in the intent's transaction. */
        void recordPending(StoreTransaction tx, String id, long gen) {
            meta.requestId()
                    .ifPresent(requestId -> tx.insertRequest(new RequestRecord(
                            requestId,
                            method.wireName(),
                            meta.fingerprint(),
                            Optional.of(id),
                            gen,
                            Optional.empty(),
                            Transitions.now(clock),
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
            recordDone(tx, RequestResult.success(outcome.name(), id, gen, revision), now);
        }

        private void recordDone(StoreTransaction tx, RequestResult result, Instant now) {
            meta.requestId()
                    .ifPresent(requestId -> tx.insertRequest(new RequestRecord(
                            requestId,
                            method.wireName(),
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
            this.sandboxId = id;
            this.generation = gen;
        }

        /**
         * A wait_until_ready answer shows the sandbox after the wait: it replaces the answer recorded with the
         * transition, so that a replay is this answer.
         */
        MutationReply recordAnswer(MutationReply committed, MutationReply awaited) {
            if (meta.requestId().isEmpty() || awaited.sandbox().equals(committed.sandbox())) {
                return awaited;
            }
            String requestId = meta.requestId().get();
            store.write(tx -> {
                tx.request(requestId)
                        .flatMap(RequestRecord::result)
                        .filter(result -> result.error().isEmpty())
                        .ifPresent(result -> tx.replaceRequestResult(
                                requestId, result.answered(awaited.sandbox(), awaited.revision())));
                return null;
            });
            return awaited;
        }
    }

    /** A request id being processed in this process; duplicates wait for its result. */
    private record InFlight(
            ApiMethod method, String fingerprint, String principal, CompletableFuture<MutationReply> result) {}

    /** What the first read of a request found: an earlier request with its request_id, or else its target. */
    private record Lookup(Optional<RequestRecord> request, SandboxRecord target, GatewayException failure) {}

    /**
     * Admits one mutating request: replays an earlier request with its request_id, joins a duplicate in flight, or
     * runs {@code body}. {@code target} (null for a create) is resolved in the same read as the request_id's look-up.
     */
    MutationReply admit(
            ApiMethod method,
            Commands.RequestMeta meta,
            Commands.Target target,
            CallDeadline deadline,
            Function<Admission, MutationReply> body) {
        if (closed) {
            throw new GatewayException(ErrorReason.GATEWAY_SHUTTING_DOWN, "the gateway is shutting down");
        }
        Admission admission = new Admission(method, meta, deadline);
        if (meta.requestId().isEmpty()) {
            return run(admission, body);
        }
        String requestId = meta.requestId().get();
        InFlight mine = new InFlight(method, meta.fingerprint(), meta.principal(), new CompletableFuture<>());
        InFlight existing = inFlight.putIfAbsent(requestId, mine);
        if (existing != null) {
            if (existing.method() != method
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
                        return new Lookup(stored, Targets.resolveIn(tx, target), null);
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
        } catch (RuntimeException e) {
            Optional<RequestRecord> elsewhere = recordedElsewhere(admission, e);
            if (elsewhere.isPresent()) {
                return awaitRecorded(elsewhere.get(), admission);
            }
            if (e instanceof GatewayException failure
                    && !admission.recorded
                    && recordable(failure.reason())
                    && admission.meta.requestId().isPresent()) {
                // Another replica may record the request_id between this one's look-ups and its insert.
                Optional<RequestRecord> raced;
                try {
                    raced = recordFailure(admission, failure);
                } catch (RuntimeException notRecorded) {
                    raced = recordedElsewhere(admission, notRecorded);
                    if (raced.isEmpty()) {
                        throw notRecorded;
                    }
                }
                if (raced.isPresent()) {
                    return awaitRecorded(raced.get(), admission);
                }
            }
            throw e;
        }
    }

    /**
     * The record of a duplicate that another replica admitted while this request ran, if that is why this request
     * failed before recording anything: its request record's insert hit the request_id's unique key, or (a create)
     * the duplicate's sandbox took the name first.
     */
    private Optional<RequestRecord> recordedElsewhere(Admission admission, RuntimeException failure) {
        if (admission.recorded || admission.meta.requestId().isEmpty()) {
            return Optional.empty();
        }
        try {
            return store.request(admission.meta.requestId().get());
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
            return Optional.empty();
        }
    }

    /**
     * Waits, polling the store within the request's deadline, until the duplicate another replica admitted has a
     * result, and replays it; SANDBOX_BUSY at the deadline, as for a duplicate in flight in this process. Never
     * finishes the duplicate's transition itself: the replica that admitted it is making its driver call.
     */
    private MutationReply awaitRecorded(RequestRecord record, Admission admission) {
        String requestId = record.requestId();
        checkSamePayload(record, admission);
        long pause = MIN_POLL_NANOS;
        while (record.result().isEmpty()) {
            long left = admission.remaining().toNanos();
            if (left <= 0 || Thread.currentThread().isInterrupted()) {
                throw new GatewayException(
                        ErrorReason.SANDBOX_BUSY,
                        "the first request with this request_id (on another gateway replica) did not finish within the"
                                + " deadline; retry to get its result");
            }
            LockSupport.parkNanos(Math.min(pause, left));
            pause = Math.min(pause * 2, MAX_POLL_NANOS);
            Optional<RequestRecord> reread = store.request(requestId);
            if (reread.isEmpty()) {
                throw new GatewayException(
                        ErrorReason.SANDBOX_BUSY,
                        "the first request with this request_id (on another gateway replica) is no longer recorded;"
                                + " retry");
            }
            record = reread.get();
        }
        return replay(record, admission);
    }

    /** Definitive answers are recorded for replays; bad input, busy sandboxes and pending transitions are not. */
    static boolean recordable(ErrorReason reason) {
        return switch (reason) {
            case SANDBOX_NOT_FOUND,
                    SANDBOX_ALREADY_EXISTS,
                    SANDBOX_ID_MISMATCH,
                    STALE_EXECUTION,
                    NOT_RUNNING,
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
                    INTERNAL,
                    CAPABILITY_UNSUPPORTED,
                    EXEC_OUTCOME_UNCERTAIN -> false;
        };
    }

    /** Records {@code e} as the request's answer; or returns the record another replica wrote first. */
    private Optional<RequestRecord> recordFailure(Admission admission, GatewayException e) {
        String requestId = admission.meta.requestId().orElseThrow();
        Instant now = Transitions.now(clock);
        return store.write(tx -> {
            Optional<RequestRecord> first = tx.request(requestId);
            if (first.isEmpty()) {
                tx.insertRequest(new RequestRecord(
                        requestId,
                        admission.method.wireName(),
                        admission.meta.fingerprint(),
                        Optional.ofNullable(admission.sandboxId),
                        admission.generation,
                        Optional.of(RequestResult.failure(
                                ErrorRecord.of(e), Optional.ofNullable(admission.sandboxId), admission.generation)),
                        now,
                        Optional.of(now),
                        admission.meta.principal()));
            }
            return first;
        });
    }

    private MutationReply replay(RequestRecord record, Admission admission) {
        checkSamePayload(record, admission);
        if (record.result().isEmpty()) {
            // Its transition is pending (a timed-out driver call, or recovery has not reached it): finish it now.
            String sandboxId = record.sandboxId().orElseThrow();
            try (SandboxLocks.Held held = locks.acquire(sandboxId, admission.remaining())) {
                transitions.completePending(sandboxId, Commands.Target.byId(sandboxId), admission.deadline());
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

    /** REQUEST_ID_REUSED unless {@code record} is of the same request as {@code admission}. */
    private static void checkSamePayload(RequestRecord record, Admission admission) {
        // Another principal's request id answers as any reused id does: nothing of the original.
        if (!record.method().equals(admission.method.wireName())
                || !record.fingerprint().equals(admission.meta.fingerprint())
                || !record.principal().equals(admission.meta.principal())) {
            throw reused(record.requestId());
        }
    }

    /** An earlier request of {@code principal}; OPERATION_NOT_FOUND if none is recorded, or another's. */
    OperationView operation(String requestId, String principal) {
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

    /**
     * Removes the records of requests that finished before {@code cutoff}, and of execs admitted before it that never
     * got a result, {@link #PRUNE_BATCH} per write transaction, so that lifecycle writes go on between the batches
     * however many records have aged.
     */
    int prune(Instant cutoff) {
        int pruned = 0;
        int batch;
        do {
            batch = store.write(tx -> tx.pruneRequests(cutoff, PRUNE_BATCH));
            pruned += batch;
        } while (batch == PRUNE_BATCH);
        return pruned;
    }

    /** Refuses new requests from now on (GATEWAY_SHUTTING_DOWN). */
    void close() {
        closed = true;
    }

    /**
     * One fair lock per sandbox id: lifecycle operations on one sandbox run one at a time, in arrival order; operations
     * on different sandboxes run concurrently. Entries are removed when nobody holds or waits for them.
     *
     * <p>Not Guava's {@code Striped}: it maps ids onto a fixed set of stripes, so two sandboxes sharing a stripe would
     * share a lock, and a driver call that holds one sandbox's lock until the driver timeout would make an unrelated
     * sandbox SANDBOX_BUSY. Exactly one lock per id, removed when unused, keeps operations on different sandboxes
     * independent and the table as small as the operations in progress.
     */
    static final class SandboxLocks {
        private final ConcurrentHashMap<String, Entry> locks = new ConcurrentHashMap<>();
        /** With other replicas, the sandbox's lease is taken with its lock and released with it. */
        private final ReplicaCoordination coordination;

        SandboxLocks(ReplicaCoordination coordination) {
            this.coordination = requireNonNull(coordination, "coordination is null");
        }

        private static final class Entry {
            final ReentrantLock lock = new ReentrantLock(true);
            int users;
        }

        /** A held lock; closing it releases the lock. */
        interface Held extends AutoCloseable {
            @Override
            void close();
        }

        /** Waits up to {@code maxWait} for the sandbox's lock; SANDBOX_BUSY if it is not free in time. */
        Held acquire(String sandboxId, Duration maxWait) {
            Entry entry = locks.compute(sandboxId, (id, existing) -> {
                Entry e = existing == null ? new Entry() : existing;
                e.users++;
                return e;
            });
            boolean acquired = false;
            try {
                acquired = entry.lock.tryLock(Math.max(0, maxWait.toNanos()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                if (!acquired) {
                    release(sandboxId, entry, false);
                }
            }
            if (!acquired) {
                throw new GatewayException(
                        ErrorReason.SANDBOX_BUSY,
                        "sandbox " + sandboxId
                                + " is busy with another operation that did not finish within the deadline");
            }
            try {
                coordination.acquire(sandboxId, maxWait);
            } catch (RuntimeException e) {
                release(sandboxId, entry, true);
                throw e;
            }
            return () -> {
                try {
                    coordination.release(sandboxId);
                } finally {
                    release(sandboxId, entry, true);
                }
            };
        }

        private void release(String sandboxId, Entry entry, boolean unlock) {
            if (unlock) {
                entry.lock.unlock();
            }
            locks.computeIfPresent(sandboxId, (id, e) -> {
                e.users--;
                return e.users == 0 ? null : e;
            });
        }

        /** How many sandboxes have a lock entry now (for tests: entries do not leak). */
        int size() {
            return locks.size();
        }
    }
}
