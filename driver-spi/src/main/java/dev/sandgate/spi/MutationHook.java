package dev.sandgate.spi;

/**
 * Called by a driver after it has resolved and verified a sandbox's runtime resource and just before it mutates that
 * resource through its immutable backend identifier (container ID, Kubernetes UID precondition, VM process identity).
 *
 * <p>The gateway passes {@link #NONE}. The conformance kit passes a hook that replaces the resource behind the
 * driver's back at exactly this moment, to prove that a resource replaced between lookup and mutation is never
 * touched. A driver calls it once per resource it is about to stop, remove or replace: {@code START} is announced
 * before (re)launching over an existing resource, with that resource's backend id. If the resource was replaced in
 * the meantime, the mutation fails ({@link DriverErrorCode#ABORTED} or {@link DriverErrorCode#NOT_FOUND}) and the
 * replacement is left alone.
 */
@FunctionalInterface
public interface MutationHook {
    MutationHook NONE = (ref, operation, backendId) -> {};

    /** The kinds of mutation a driver announces. */
    enum Operation {
        STOP,
        START,
        DELETE
    }

    /**
     * Called before the driver mutates a backend resource.
     *
     * @param ref the sandbox
     * @param operation what the driver is about to do
     * @param backendId the immutable backend identifier the driver will mutate through
     */
    void beforeMutation(SandboxRef ref, Operation operation, String backendId);
}
