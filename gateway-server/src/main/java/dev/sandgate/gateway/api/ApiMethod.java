package dev.sandgate.gateway.api;

import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The methods of {@code sandgate.v1.SandboxService}, so that code deciding by method (roles, authorization, request
 * records) switches over an enum the compiler checks for completeness rather than over strings. {@link #wireName()} is
 * the method's name in the service, as gRPC and the request records in the store spell it.
 */
public enum ApiMethod {
    CREATE_SANDBOX("CreateSandbox", true),
    GET_SANDBOX("GetSandbox", false),
    LIST_SANDBOXES("ListSandboxes", false),
    WATCH_SANDBOXES("WatchSandboxes", false),
    STOP_SANDBOX("StopSandbox", true),
    START_SANDBOX("StartSandbox", true),
    DELETE_SANDBOX("DeleteSandbox", true),
    GET_OPERATION("GetOperation", false),
    GET_SANDBOX_POLICY("GetSandboxPolicy", false),
    UPDATE_SANDBOX_POLICY("UpdateSandboxPolicy", true),
    RENEW_SANDBOX_LEASE("RenewSandboxLease", true),
    EXEC_SANDBOX("ExecSandbox", true),
    STREAM_SANDBOX_LOGS("StreamSandboxLogs", false);

    private static final Map<String, ApiMethod> BY_WIRE_NAME =
            Arrays.stream(values()).collect(Collectors.toUnmodifiableMap(ApiMethod::wireName, Function.identity()));

    private final String wireName;
    private final boolean mutating;

    ApiMethod(String wireName, boolean mutating) {
        this.wireName = wireName;
        this.mutating = mutating;
    }

    /** The method's name in the service ({@code StopSandbox}). */
    public String wireName() {
        return wireName;
    }

    /** Whether the method changes a sandbox (and takes a {@code request_id}). */
    public boolean mutating() {
        return mutating;
    }

    /** The method of this name, or empty for a name the service does not have (a newer client's, say). */
    public static Optional<ApiMethod> ofWireName(String wireName) {
        return Optional.ofNullable(BY_WIRE_NAME.get(wireName));
    }

    @Override
    public String toString() {
        return wireName;
    }
}
