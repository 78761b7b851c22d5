package dev.sandgate.spi;

/**
 * What went wrong in a driver call, as a code the gateway maps to a gRPC status in exactly one place.
 *
 * <p>Nobody matches on message text: callers switch over this enum.
 */
public enum DriverErrorCode {
    /** The request itself is malformed (an identifier, a digest, a label). Retrying it cannot help. */
    INVALID_ARGUMENT,
    /** No runtime resource carries the requested sandbox id. Never answered by falling back to a name. */
    NOT_FOUND,
    /** A resource with this sandbox id exists with a different launch input. */
    ALREADY_EXISTS,
    /**
     * The resource exists but not in the state the request requires: its name or workspace differs from the
     * reference, it runs another execution generation, or the launch input is older than what it carries. Nothing
     * was mutated.
     */
    FAILED_PRECONDITION,
    /** The driver cannot do what was asked (a policy field it cannot enforce, a capability it lacks). */
    UNSUPPORTED,
    /** The backend changed underneath a mutation (a concurrent writer); the caller may retry the whole call. */
    ABORTED,
    /** The backend cannot be reached or refused to serve; the call may be retried later. */
    UNAVAILABLE,
    /** The backend did not finish within the driver's time budget; the outcome is unknown. */
    DEADLINE_EXCEEDED,
    /** A bug or an unexpected backend answer. */
    INTERNAL
}
