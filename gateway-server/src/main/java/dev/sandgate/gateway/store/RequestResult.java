package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.util.Optional;
import java.util.OptionalInt;

/**
 * The recorded result of a mutating request.
 *
 * @param outcome what happened, in the method's own words ({@code STOPPED_NOW}, {@code LAUNCHED}, ...); empty for an
 *     error
 * @param sandboxId the sandbox the request acted on, or empty
 * @param generation the execution generation the result refers to
 * @param policyRevision for policy updates, the admitted revision
 * @param error the error the request ended with, if it failed
 * @param sandbox the sandbox as the request's answer showed it, so that a replay answers exactly that (empty when the
 *     answer showed none, and in results recorded before answers were kept)
 * @param revision the policy revision the answer showed, if any
 * @param exitCode for an exec, the command's exit code
 */
public record RequestResult(
        String outcome,
        Optional<String> sandboxId,
        long generation,
        long policyRevision,
        Optional<ErrorRecord> error,
        Optional<SandboxRecord> sandbox,
        Optional<PolicyRevisionRecord> revision,
        OptionalInt exitCode) {
    public RequestResult {
        requireNonNull(exitCode, "exitCode is null");
        requireNonNull(outcome, "outcome is null");
        requireNonNull(sandboxId, "sandboxId is null");
        requireNonNull(error, "error is null");
        requireNonNull(sandbox, "sandbox is null");
        requireNonNull(revision, "revision is null");
    }

    public RequestResult(
            String outcome,
            Optional<String> sandboxId,
            long generation,
            long policyRevision,
            Optional<ErrorRecord> error,
            Optional<SandboxRecord> sandbox,
            Optional<PolicyRevisionRecord> revision) {
        this(outcome, sandboxId, generation, policyRevision, error, sandbox, revision, OptionalInt.empty());
    }

    public RequestResult(
            String outcome,
            Optional<String> sandboxId,
            long generation,
            long policyRevision,
            Optional<ErrorRecord> error) {
        this(outcome, sandboxId, generation, policyRevision, error, Optional.empty(), Optional.empty());
    }

    /** The result of an exec that ended with {@code exitCode} (outcome {@code EXITED}). */
    public static RequestResult exited(String sandboxId, long generation, int exitCode) {
        return new RequestResult(
                "EXITED",
                Optional.of(sandboxId),
                generation,
                0,
                Optional.empty(),
                Optional.empty(),
                Optional.empty(),
                OptionalInt.of(exitCode));
    }

    public static RequestResult success(String outcome, String sandboxId, long generation, long policyRevision) {
        return new RequestResult(outcome, Optional.ofNullable(sandboxId), generation, policyRevision, Optional.empty());
    }

    /** This result with the sandbox and revision its answer showed. */
    public RequestResult answered(
            Optional<SandboxRecord> answeredSandbox, Optional<PolicyRevisionRecord> answeredRevision) {
        return new RequestResult(
                outcome, sandboxId, generation, policyRevision, error, answeredSandbox, answeredRevision, exitCode);
    }

    public static RequestResult failure(ErrorRecord error, Optional<String> sandboxId, long generation) {
        return new RequestResult("", sandboxId, generation, 0, Optional.of(error));
    }
}
