package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.api.ApiMethod;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.store.ErrorRecord;
import dev.sandgate.gateway.store.RequestRecord;
import dev.sandgate.gateway.store.RequestResult;
import dev.sandgate.gateway.store.SandboxPhase;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.gateway.token.ExecutionTokens;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.LogStream;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StreamKind;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Commands and output pinned to one execution: {@code ExecSandbox} and {@code StreamSandboxLogs}. Each call is refused
 * before anything runs when the driver lacks the capability (CAPABILITY_UNSUPPORTED); its execution token's signature
 * is verified, its target resolved by id as for every call ({@link Targets}), and the token's generation must be the
 * sandbox's current one (STALE_EXECUTION); an exec also needs that execution running (NOT_RUNNING). The driver is then
 * called with that generation, which it checks once more against the runtime resource, so a command never reaches a
 * newer execution.
 *
 * <p>Neither call holds the sandbox's lifecycle lock while it runs: a stop does not wait for a long exec (the driver
 * pins the execution, and a stop ends the command with it).
 *
 * <p>An exec with a request_id is admitted durably before the driver is called (its request record, pending, with
 * the sandbox id and generation it resolved to), and its exit code is recorded when it ends. A retry of a finished
 * one is answered with that exit code and runs nothing; a retry of one whose outcome is unknown (it still runs, the
 * gateway stopped while it ran, or the driver lost it) is EXEC_OUTCOME_UNCERTAIN, never a second run; the same
 * request_id with another request is REQUEST_ID_REUSED. A driver's refusal is recorded by what the SPI guarantees of
 * it ({@link #afterRefusal}): a permanent refusal that ran nothing is replayed as it was; a driver UNAVAILABLE, which
 * ran nothing but may pass, lets a retry run the command (once: the retry is admitted in the record's place, and a
 * concurrent one is EXEC_OUTCOME_UNCERTAIN); any other failure is EXEC_OUTCOME_UNCERTAIN for retries.
 *
 * <p>The records are pruned as every request record is, after the request retention: a finished one counted from
 * its end, one that never got a result (the gateway stopped while it ran) from its admission.
 */
public final class Execs {
    private static final Logger log = LoggerFactory.getLogger(Execs.class);

    /** The outcome of a recorded driver refusal that ran nothing and may be retried (see {@link #afterRefusal}). */
    static final String REFUSED_FOR_NOW = "REFUSED_FOR_NOW";

    private final Store store;
    private final ComputeDriver driver;
    private final DriverCapabilities capabilities;
    private final ExecutionTokens tokens;
    private final Targets targets;
    private final Clock clock;

    Execs(
            Store store,
            ComputeDriver driver,
            DriverCapabilities capabilities,
            ExecutionTokens tokens,
            Targets targets,
            Clock clock) {
        this.store = requireNonNull(store, "store is null");
        this.driver = requireNonNull(driver, "driver is null");
        this.capabilities = requireNonNull(capabilities, "capabilities is null");
        this.tokens = requireNonNull(tokens, "tokens is null");
        this.targets = requireNonNull(targets, "targets is null");
        this.clock = requireNonNull(clock, "clock is null");
    }

    /**
     * A validated exec.
     *
     * @param meta the idempotency part (its fingerprint leaves environment values out)
     * @param tokenField the request field that carries the token, named in errors
     */
    public record Exec(
            Commands.RequestMeta meta, Commands.Target target, String token, String tokenField, ExecCommand command) {
        public Exec {
            requireNonNull(meta, "meta is null");
            requireNonNull(target, "target is null");
            requireNonNull(token, "token is null");
            requireNonNull(tokenField, "tokenField is null");
            requireNonNull(command, "command is null");
        }

        @Override
        public String toString() {
            return "Exec[target=" + target + ", command=" + command.command().getFirst() + "]";
        }
    }

    /** A validated logs read. */
    public record Logs(Commands.Target target, String token, String tokenField, LogQuery query) {
        public Logs {
            requireNonNull(target, "target is null");
            requireNonNull(token, "token is null");
            requireNonNull(tokenField, "tokenField is null");
            requireNonNull(query, "query is null");
        }

        @Override
        public String toString() {
            return "Logs[target=" + target + ", query=" + query + "]";
        }
    }

    /** What an exec started as: a running command, or the replay of a finished one. */
    public sealed interface Started {
        String sandboxId();

        long generation();
    }

    /** The command runs; closing {@code process} kills it. */
    public record Running(String sandboxId, long generation, ExecProcess process) implements Started {}

    /** A retry of an exec that had finished: nothing ran now. */
    public record Replayed(String sandboxId, long generation, int exitCode) implements Started {}

    /** An open logs read; closing {@code stream} ends it. */
    public record Reading(String sandboxId, long generation, LogStream stream) {}

    /** The execution a call was pinned to. */
    public record Pinned(String sandboxId, long generation) {}

    /**
     * Starts an exec, or answers a retry of one. The listener {@code listenerFor} makes for the execution the exec is
     * pinned to receives the output, then the exit (after it is recorded, for an exec with a request_id), or the
     * failure; for a replay, none is made.
     */
    public Started exec(Exec c, java.util.function.Function<Pinned, ExecListener> listenerFor) {
        if (!capabilities.exec()) {
            throw new GatewayException(
                    ErrorReason.CAPABILITY_UNSUPPORTED, "the driver cannot run commands in a sandbox (exec)");
        }
        ExecutionTokens.Claim claim = tokens.verify(c.tokenField(), c.token());
        Optional<String> requestId = c.meta().requestId();
        SandboxRecord row;
        boolean readmitted = false;
        if (requestId.isPresent()) {
            Admitted admitted = admit(c, claim, requestId.get());
            if (admitted.replay() != null) {
                return admitted.replay();
            }
            row = admitted.row();
            readmitted = admitted.readmitted();
        } else {
            row = targets.resolve(c.target());
            checkToken(claim, row, c.tokenField());
            checkRunning(row);
        }
        SandboxRef ref = new SandboxRef(row.id(), row.workspace(), row.name());
        ExecListener listener = listenerFor.apply(new Pinned(row.id(), row.generation()));
        ExecListener recording = requestId.isEmpty()
                ? listener
                : new RecordingListener(new Attempt(requestId.get(), readmitted), row.id(), row.generation(), listener);
        try {
            ExecProcess process = driver.exec(ref, row.generation(), c.command(), recording);
            log.info(
                    "exec sandbox={} generation={} program={} request={}",
                    row.id(),
                    row.generation(),
                    c.command().command().getFirst(),
                    requestId.orElse("none"));
            return new Running(row.id(), row.generation(), requireNonNull(process, "the driver returned no process"));
        } catch (DriverException e) {
            GatewayException refused = GatewayException.fromPinnedCall(e);
            if (requestId.isPresent()) {
                record(new Attempt(requestId.get(), readmitted), afterRefusal(requestId.get(), e.code(), refused, row));
            }
            throw refused;
        } catch (RuntimeException e) {
            if (requestId.isPresent()) {
                record(
                        new Attempt(requestId.get(), readmitted),
                        uncertain(requestId.get(), row.id(), row.generation()));
            }
            throw e;
        }
    }

    /**
     * What a retry of an exec that the driver refused with {@code code} answers, by what the SPI guarantees of the
     * refusal: the codes {@link ComputeDriver#exec} documents ran nothing. A permanent one is replayed as it was;
     * UNAVAILABLE is recorded as {@link #REFUSED_FOR_NOW}, so that a retry runs the command; a code the contract does
     * not name for exec may have run something: EXEC_OUTCOME_UNCERTAIN.
     */
    static RequestResult afterRefusal(
            String requestId, DriverErrorCode code, GatewayException refused, SandboxRecord row) {
        RequestResult failure = RequestResult.failure(ErrorRecord.of(refused), Optional.of(row.id()), row.generation());
        return switch (code) {
            case UNSUPPORTED, INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION -> failure;
            case UNAVAILABLE ->
                new RequestResult(REFUSED_FOR_NOW, failure.sandboxId(), failure.generation(), 0, failure.error());
            case ABORTED, DEADLINE_EXCEEDED, ALREADY_EXISTS, INTERNAL ->
                uncertain(requestId, row.id(), row.generation());
        };
    }

    /** Starts reading the output of the execution the token names (running or stopped, but the current one). */
    public Reading logs(Logs c, LogListener listener) {
        if (!capabilities.logs()) {
            throw new GatewayException(
                    ErrorReason.CAPABILITY_UNSUPPORTED, "the driver cannot read a sandbox's output (logs)");
        }
        ExecutionTokens.Claim claim = tokens.verify(c.tokenField(), c.token());
        SandboxRecord row = targets.resolve(c.target());
        checkToken(claim, row, c.tokenField());
        SandboxRef ref = new SandboxRef(row.id(), row.workspace(), row.name());
        try {
            LogStream stream = driver.logs(ref, row.generation(), c.query(), listener);
            return new Reading(row.id(), row.generation(), requireNonNull(stream, "the driver returned no stream"));
        } catch (DriverException e) {
            throw GatewayException.fromPinnedCall(e);
        }
    }

    /**
     * The stored row an exec admitted, or its replay.
     *
     * @param readmitted the request_id's record was a refusal that ran nothing, and this attempt took its place
     */
    private record Admitted(SandboxRecord row, Replayed replay, boolean readmitted) {}

    /** One attempt of an exec with a request_id: the first (its record is pending) or a re-admitted one. */
    private record Attempt(String requestId, boolean readmitted) {}

    /**
     * In one write transaction: the request_id's earlier record answers, or the new exec (or the retry of one the
     * driver refused for now) is checked and recorded.
     */
    private Admitted admit(Exec c, ExecutionTokens.Claim claim, String requestId) {
        Instant now = Transitions.now(clock);
        return store.write(tx -> {
            Optional<RequestRecord> earlier = tx.request(requestId);
            if (earlier.isPresent() && !refusedForNow(earlier.get(), c.meta())) {
                return new Admitted(null, replay(earlier.get(), c.meta()), false);
            }
            SandboxRecord row = Targets.resolveIn(tx, c.target());
            checkToken(claim, row, c.tokenField());
            checkRunning(row);
            if (earlier.isPresent()) {
                // Until this attempt ends, a retry cannot know whether it runs.
                tx.replaceRequestResult(requestId, uncertain(requestId, row.id(), row.generation()));
                return new Admitted(row, null, true);
            }
            tx.insertRequest(new RequestRecord(
                    requestId,
                    ApiMethod.EXEC_SANDBOX.wireName(),
                    c.meta().fingerprint(),
                    Optional.of(row.id()),
                    row.generation(),
                    Optional.empty(),
                    now,
                    Optional.empty(),
                    c.meta().principal()));
            return new Admitted(row, null, false);
        });
    }

    /** Whether {@code record} is this request's, refused by the driver without running anything, and may run now. */
    private static boolean refusedForNow(RequestRecord record, Commands.RequestMeta meta) {
        return record.method().equals(ApiMethod.EXEC_SANDBOX.wireName())
                && record.fingerprint().equals(meta.fingerprint())
                && record.principal().equals(meta.principal())
                && record.result().map(r -> r.outcome().equals(REFUSED_FOR_NOW)).orElse(false);
    }

    private static Replayed replay(RequestRecord record, Commands.RequestMeta meta) {
        if (!record.method().equals(ApiMethod.EXEC_SANDBOX.wireName())
                || !record.fingerprint().equals(meta.fingerprint())
                || !record.principal().equals(meta.principal())) {
            throw new GatewayException(
                    ErrorReason.REQUEST_ID_REUSED,
                    "request_id " + record.requestId() + " was used before for a different request",
                    null,
                    List.of(),
                    Map.of("request_id", record.requestId()));
        }
        if (record.result().isEmpty()) {
            throw uncertainError(record.requestId(), record.sandboxId().orElse(""), record.generation());
        }
        RequestResult result = record.result().get();
        if (result.error().isPresent()) {
            throw result.error().get().toException();
        }
        return new Replayed(
                result.sandboxId().orElseThrow(),
                result.generation(),
                result.exitCode()
                        .orElseThrow(() -> new IllegalStateException(
                                "exec request " + record.requestId() + " has a result without an exit code")));
    }

    private static GatewayException uncertainError(String requestId, String sandboxId, long generation) {
        return new GatewayException(
                ErrorReason.EXEC_OUTCOME_UNCERTAIN,
                "an exec with request_id " + requestId + " was admitted and its outcome is unknown: it may still run,"
                        + " or the gateway or the driver lost it while it ran; it is not run again",
                null,
                List.of(),
                Map.of("request_id", requestId, "sandbox_id", sandboxId, "generation", Long.toString(generation)));
    }

    /** The result that answers a retry with EXEC_OUTCOME_UNCERTAIN. */
    private static RequestResult uncertain(String requestId, String sandboxId, long generation) {
        return RequestResult.failure(
                ErrorRecord.of(uncertainError(requestId, sandboxId, generation)), Optional.of(sandboxId), generation);
    }

    /** The token must name the sandbox's current execution. */
    private static void checkToken(ExecutionTokens.Claim claim, SandboxRecord row, String field) {
        if (!claim.sandboxId().equals(row.id())) {
            throw GatewayException.withMismatch(
                    ErrorReason.STALE_EXECUTION,
                    field + " belongs to another sandbox (" + claim.sandboxId() + "), not " + row.id()
                            + "; it may have been deleted and its name reused",
                    new Mismatch(Mismatch.SANDBOX_ID, claim.sandboxId(), row.id()));
        }
        if (claim.generation() != row.generation()) {
            throw GatewayException.withMismatch(
                    ErrorReason.STALE_EXECUTION,
                    field + " names generation " + claim.generation() + " of sandbox " + row.id()
                            + ", but its current execution is generation " + row.generation(),
                    new Mismatch(
                            Mismatch.GENERATION, Long.toString(claim.generation()), Long.toString(row.generation())));
        }
    }

    private static void checkRunning(SandboxRecord row) {
        if (row.phase() != SandboxPhase.READY) {
            throw GatewayException.withMismatch(
                    ErrorReason.NOT_RUNNING,
                    "execution " + row.generation() + " of sandbox " + row.id() + " does not run (phase " + row.phase()
                            + ")",
                    new Mismatch(GatewayException.RUNNING, "true", "false"));
        }
    }

    /**
     * Records how {@code attempt} ended: the result of a first attempt completes its pending record; a re-admitted one
     * replaces the result it stood in for.
     */
    private void record(Attempt attempt, RequestResult result) {
        try {
            store.write(tx -> {
                if (attempt.readmitted()) {
                    tx.replaceRequestResult(attempt.requestId(), result);
                } else {
                    tx.completeRequest(attempt.requestId(), result, Transitions.now(clock));
                }
                return null;
            });
        } catch (RuntimeException e) {
            // The record keeps what it had (no result, or "uncertain"): a retry answers EXEC_OUTCOME_UNCERTAIN.
            log.warn("exec request={}: recording its result failed: {}", attempt.requestId(), e.toString());
        }
    }

    /**
     * Records the end before the client hears it, so that a retry after the answer replays it: the exit code, or, when
     * the outcome is unknown, EXEC_OUTCOME_UNCERTAIN.
     */
    private final class RecordingListener implements ExecListener {
        private final Attempt attempt;
        private final String sandboxId;
        private final long generation;
        private final ExecListener delegate;

        RecordingListener(Attempt attempt, String sandboxId, long generation, ExecListener delegate) {
            this.attempt = attempt;
            this.sandboxId = sandboxId;
            this.generation = generation;
            this.delegate = delegate;
        }

        @Override
        public void output(StreamKind stream, byte[] data) {
            delegate.output(stream, data);
        }

        @Override
        public void exited(int exitCode) {
            record(attempt, RequestResult.exited(sandboxId, generation, exitCode));
            delegate.exited(exitCode);
        }

        @Override
        public void failed(DriverException error) {
            // The outcome is unknown: a retry is EXEC_OUTCOME_UNCERTAIN (a re-admitted attempt already records it).
            if (!attempt.readmitted()) {
                record(attempt, uncertain(attempt.requestId(), sandboxId, generation));
            }
            delegate.failed(error);
        }
    }
}
