package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

import java.util.List;

/**
 * The one exception drivers throw. It carries a {@link DriverErrorCode} and, for failed preconditions, the
 * {@link Mismatch}es found. The gateway maps it to a gRPC status; drivers never know about gRPC.
 *
 * <p>Whether the failure is transient (the gateway retries the call) or permanent (the gateway ends the transition
 * with it) is a property of its code alone: {@link DriverErrorCode#isTransient()}.
 *
 * <p>Messages must not contain secrets (environment values, tokens, keys).
 */
public final class DriverException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final DriverErrorCode code;
    private final List<Mismatch> mismatches;

    public DriverException(DriverErrorCode code, String message) {
        this(code, message, List.of(), null);
    }

    public DriverException(DriverErrorCode code, String message, Throwable cause) {
        this(code, message, List.of(), cause);
    }

    public DriverException(DriverErrorCode code, String message, List<Mismatch> mismatches, Throwable cause) {
        super(requireNonNull(message, "message is null"), cause);
        this.code = requireNonNull(code, "code is null");
        this.mismatches = List.copyOf(requireNonNull(mismatches, "mismatches is null"));
    }

    public DriverErrorCode code() {
        return code;
    }

    /**
     * The attributes whose expected and actual values differed; empty unless the code is FAILED_PRECONDITION or
     * ALREADY_EXISTS.
     */
    public List<Mismatch> mismatches() {
        return mismatches;
    }

    /** INVALID_ARGUMENT naming the offending field. */
    public static DriverException invalidArgument(String field, String problem) {
        return new DriverException(DriverErrorCode.INVALID_ARGUMENT, field + ": " + problem);
    }

    /** NOT_FOUND for a sandbox id that no runtime resource of this gateway carries. */
    public static DriverException notFound(SandboxRef ref) {
        return new DriverException(DriverErrorCode.NOT_FOUND, "no runtime resource carries sandbox id " + ref.id());
    }

    /**
     * FAILED_PRECONDITION because the resource found for {@code ref.id()} carries another workspace or name. Call it
     * before mutating anything.
     */
    public static DriverException identityMismatch(SandboxRef ref, String actualWorkspace, String actualName) {
        var list = new java.util.ArrayList<Mismatch>(2);
        if (!ref.workspace().equals(actualWorkspace)) {
            list.add(new Mismatch(Mismatch.WORKSPACE, ref.workspace(), actualWorkspace));
        }
        if (!ref.name().equals(actualName)) {
            list.add(new Mismatch(Mismatch.NAME, ref.name(), actualName));
        }
        return new DriverException(
                DriverErrorCode.FAILED_PRECONDITION,
                "sandbox " + ref.id() + " is " + actualWorkspace + "/" + actualName + ", not " + ref.workspace() + "/"
                        + ref.name(),
                list,
                null);
    }

    /**
     * FAILED_PRECONDITION because the resource found by name (the workspace and name of {@code ref}) carries another
     * sandbox id: what {@code create} answers when the name is held by another sandbox. Never return, reuse or change
     * that resource.
     */
    public static DriverException sandboxIdMismatch(SandboxRef ref, String actualId) {
        return new DriverException(
                DriverErrorCode.FAILED_PRECONDITION,
                ref.workspace() + "/" + ref.name() + " is held by sandbox " + actualId + ", not " + ref.id(),
                List.of(new Mismatch(Mismatch.SANDBOX_ID, ref.id(), String.valueOf(actualId))),
                null);
    }

    /**
     * FAILED_PRECONDITION for a start that the generation {@code actual} the resource carries refuses: the input is
     * older ({@code requested < actual}), or the resource runs another generation. Carries the generation mismatch
     * (requested, carried).
     */
    public static DriverException launchRefused(SandboxRef ref, long requested, long actual) {
        String why = requested < actual
                ? "launch input generation " + requested + " is older than generation " + actual + " of sandbox "
                        + ref.id()
                : "sandbox " + ref.id() + " runs generation " + actual + "; stop it before launching " + requested;
        return new DriverException(
                DriverErrorCode.FAILED_PRECONDITION,
                why,
                List.of(new Mismatch(Mismatch.GENERATION, Long.toString(requested), Long.toString(actual))),
                null);
    }

    /**
     * FAILED_PRECONDITION for a start of the generation the resource carries, but with another policy digest.
     * Carries the policy digest mismatch (requested, carried).
     */
    public static DriverException policyDigestMismatch(SandboxRef ref, String requested, String actual) {
        return new DriverException(
                DriverErrorCode.FAILED_PRECONDITION,
                "sandbox " + ref.id() + " carries its generation with another policy",
                List.of(new Mismatch(Mismatch.POLICY_DIGEST, requested, String.valueOf(actual))),
                null);
    }

    /**
     * ALREADY_EXISTS for a create of an id whose resource carries another generation or policy digest than {@code
     * launch}; carries a mismatch for each that differs (requested, carried).
     */
    public static DriverException alreadyExists(
            SandboxRef ref, LaunchInput launch, long actualGeneration, String actualDigest) {
        var list = new java.util.ArrayList<Mismatch>(2);
        if (launch.generation() != actualGeneration) {
            list.add(new Mismatch(
                    Mismatch.GENERATION, Long.toString(launch.generation()), Long.toString(actualGeneration)));
        }
        if (!launch.policy().digest().equals(actualDigest)) {
            list.add(new Mismatch(Mismatch.POLICY_DIGEST, launch.policy().digest(), String.valueOf(actualDigest)));
        }
        return new DriverException(
                DriverErrorCode.ALREADY_EXISTS,
                "sandbox " + ref.id() + " exists at generation " + actualGeneration + " with policy " + actualDigest
                        + ", not at generation " + launch.generation() + " with policy "
                        + launch.policy().digest(),
                list,
                null);
    }

    /**
     * ABORTED because the resource {@code backendId} of {@code ref} was removed or replaced between the lookup and
     * the {@code operation} ("stop", "start", "delete"); nothing was changed and the caller may retry the whole call.
     */
    public static DriverException replaced(SandboxRef ref, String backendId, String operation) {
        return new DriverException(
                DriverErrorCode.ABORTED,
                "the resource of sandbox " + ref.id() + " (" + backendId + ") was removed or replaced between lookup"
                        + " and " + operation + "; nothing was changed");
    }

    /** FAILED_PRECONDITION because the resource runs another execution generation than the caller expected. */
    public static DriverException generationMismatch(SandboxRef ref, long expected, long actual) {
        return new DriverException(
                DriverErrorCode.FAILED_PRECONDITION,
                "sandbox " + ref.id() + " is at execution generation " + actual + ", expected " + expected,
                List.of(new Mismatch(Mismatch.GENERATION, Long.toString(expected), Long.toString(actual))),
                null);
    }

    /**
     * FAILED_PRECONDITION because execution {@code generation} of {@code ref}, which the resource carries, does not
     * run: what an exec answers for a stopped execution. Carries the {@code running} mismatch (true, false).
     */
    public static DriverException notRunning(SandboxRef ref, long generation) {
        return new DriverException(
                DriverErrorCode.FAILED_PRECONDITION,
                "execution generation " + generation + " of sandbox " + ref.id() + " does not run",
                List.of(new Mismatch(Mismatch.RUNNING, "true", "false")),
                null);
    }
}
