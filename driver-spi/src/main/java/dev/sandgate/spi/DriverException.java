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

    /** The attributes whose expected and actual values differed; empty unless the code is FAILED_PRECONDITION. */
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

    /** FAILED_PRECONDITION because the resource runs another execution generation than the caller expected. */
    public static DriverException generationMismatch(SandboxRef ref, long expected, long actual) {
        return new DriverException(
                DriverErrorCode.FAILED_PRECONDITION,
                "sandbox " + ref.id() + " is at execution generation " + actual + ", expected " + expected,
                List.of(new Mismatch(Mismatch.GENERATION, Long.toString(expected), Long.toString(actual))),
                null);
    }
}
