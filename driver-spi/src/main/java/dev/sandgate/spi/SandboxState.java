package dev.sandgate.spi;

/** The state of a sandbox's current execution as the backend reports it. */
public enum SandboxState {
    /** The runtime resource exists; the execution is being set up and is not running yet. */
    PROVISIONING,
    /** The execution runs. */
    RUNNING,
    /** The execution is being stopped. */
    STOPPING,
    /** No execution runs; the workspace is kept and a start launches the next generation. */
    STOPPED,
    /** The execution could not start or ended abnormally; a start launches the next generation. */
    FAILED,
    /** The backend reports something the driver cannot map. */
    UNKNOWN
}
