package dev.sandgate.spi;

/**
 * What went wrong in a driver call, as a code the gateway maps to a gRPC status in exactly one place.
 *
 * <p>Nobody matches on message text: callers switch over this enum.
 *
 * <h2>Transient and permanent failures</h2>
 *
 * One rule, by code: {@link #UNAVAILABLE}, {@link #DEADLINE_EXCEEDED} and {@link #ABORTED} are <b>transient</b> (the
 * same call may succeed later; the gateway keeps the transition pending and retries it); every other code is
 * <b>permanent</b> (the same call with the same input will fail the same way; the gateway ends the transition with
 * this failure as its cause and does not retry). A driver therefore reports a backend that cannot be asked as
 * UNAVAILABLE, and a backend that answered "never" as a permanent code: an image the backend does not have and cannot
 * pull, a spec it refuses, a missing kernel are {@link #INVALID_ARGUMENT} naming {@code spec.image} (or the field at
 * fault), never UNAVAILABLE.
 */
public enum DriverErrorCode {
    /**
     * The request cannot be carried out as given: it is malformed (an identifier, a digest, a label), or the backend
     * answered that it never can (an image it does not have and cannot pull, a spec it refuses). The message starts
     * with the field at fault ({@code spec.image: ...}). Retrying it cannot help.
     */
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
    /**
     * The backend cannot be reached or refused to serve for now; the call may be retried later. Not for a backend that
     * answered that the request can never succeed (that is a permanent code, see above).
     */
    UNAVAILABLE,
    /** The backend did not finish within the driver's time budget; the outcome is unknown. */
    DEADLINE_EXCEEDED,
    /** A bug or an unexpected backend answer. */
    INTERNAL;

    /**
     * Whether a call that failed with this code may succeed when made again with the same input: true for UNAVAILABLE,
     * DEADLINE_EXCEEDED and ABORTED, false (permanent) for every other code.
     */
    public boolean isTransient() {
        return switch (this) {
            case UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED -> true;
            case INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION, UNSUPPORTED, INTERNAL -> false;
        };
    }
}
