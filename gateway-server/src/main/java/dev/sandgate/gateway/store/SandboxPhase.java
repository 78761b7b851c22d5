package dev.sandgate.gateway.store;

/** The lifecycle phase the gateway records for a sandbox. */
public enum SandboxPhase {
    /** Create is committed; the runtime resource is being created or its execution is starting up. */
    PROVISIONING,
    /** The current execution runs. */
    READY,
    /** A stop is committed and in progress. */
    STOPPING,
    /** No execution runs; the workspace is kept. */
    STOPPED,
    /** A start is committed (a generation is claimed) and is being launched. */
    STARTING,
    /** A delete is committed and in progress. */
    DELETING,
    /** The last transition failed or the execution ended abnormally; a start launches a new generation. */
    ERROR;

    /** Whether an execution may be running in this phase (so that its static policy cannot change). */
    public boolean mayRun() {
        return switch (this) {
            case PROVISIONING, READY, STOPPING, STARTING -> true;
            case STOPPED, DELETING, ERROR -> false;
        };
    }
}
