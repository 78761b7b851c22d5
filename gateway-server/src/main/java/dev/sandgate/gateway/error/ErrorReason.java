package dev.sandgate.gateway.error;

/**
 * Every reason the gateway puts in a {@code google.rpc.ErrorInfo}. Each has exactly one gRPC status code, assigned in
 * {@code dev.sandgate.gateway.grpc.ErrorMapper}; docs/api.md lists them all (a test keeps the two in step).
 */
public enum ErrorReason {
    /** A request field is malformed or out of range; the field is named. Nothing was written. */
    INVALID_FIELD,
    /** No sandbox has the requested id (or workspace and name). */
    SANDBOX_NOT_FOUND,
    /** The workspace already has a sandbox with this name. */
    SANDBOX_ALREADY_EXISTS,
    /** The id and the name (or an expected sandbox id) designate different sandboxes. */
    SANDBOX_ID_MISMATCH,
    /** The expected execution token names an execution that is no longer the sandbox's current one. */
    STALE_EXECUTION,
    /** The execution the request names is not running (RenewSandboxLease, ExecSandbox of a stopped execution). */
    NOT_RUNNING,
    /** The expected execution token is well formed but its signature does not verify. */
    EXECUTION_TOKEN_INVALID,
    /** The request id was used before for a different request. */
    REQUEST_ID_REUSED,
    /** GetOperation: no request with this id is recorded (never made, or pruned after the retention). */
    OPERATION_NOT_FOUND,
    /** The sandbox's policy is FROZEN: it cannot be updated. */
    POLICY_FROZEN,
    /** The update changes the static policy while an execution may be running. */
    STATIC_POLICY_CHANGE_REQUIRES_STOP,
    /** The admitted policy revision is not the one the update expected. */
    REVISION_MISMATCH,
    /** The driver cannot do what the request needs (enforce a policy field, launch a changed policy). */
    DRIVER_CAPABILITY_MISSING,
    /** Another operation on the sandbox did not finish within the caller's deadline. */
    SANDBOX_BUSY,
    /** The driver did not answer in time or was unavailable; the transition is recorded and will be completed. */
    TRANSITION_PENDING,
    /** A pending create or start was cancelled by a delete of the sandbox before the driver completed it. */
    TRANSITION_CANCELLED,
    /** The driver could not be reached while checking the request; nothing was recorded. */
    DRIVER_UNAVAILABLE,
    /** The sandbox's runtime resource is gone (removed behind the gateway's back). */
    RUNTIME_MISSING,
    /** The runtime resource does not match what the gateway recorded (identity or generation); nothing mutated. */
    RUNTIME_CONFLICT,
    /** The driver found a runtime resource for this id with a different launch input. */
    RUNTIME_ALREADY_EXISTS,
    /** The backend changed underneath the driver's mutation; retrying may help. */
    DRIVER_ABORTED,
    /** The driver failed unexpectedly. */
    DRIVER_INTERNAL,
    /** A watch client did not keep up with the event stream; watch again. */
    WATCH_OVERFLOW,
    /** The gateway is shutting down. */
    GATEWAY_SHUTTING_DOWN,
    /** The call carries no valid credentials (client certificate, bearer JWT or API token). Nothing was read. */
    UNAUTHENTICATED,
    /** The principal has no role that allows the call in the workspace it names; says nothing of the sandbox. */
    PERMISSION_DENIED,
    /** A gateway bug. */
    INTERNAL,
    /** The driver does not offer what the call needs (exec, logs); refused before anything ran. */
    CAPABILITY_UNSUPPORTED,
    /** An exec with this request_id was admitted but its outcome is unknown (it ran, or runs, without a result). */
    EXEC_OUTCOME_UNCERTAIN
}
