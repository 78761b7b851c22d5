package dev.sandgate.gateway.security;

import dev.sandgate.gateway.api.ApiMethod;
import java.util.Locale;

/** What a principal may do in a workspace; each role includes the ones before it. */
enum Role {
    /** GetSandbox, ListSandboxes, WatchSandboxes, GetOperation, GetSandboxPolicy, StreamSandboxLogs. */
    VIEWER,
    /** And CreateSandbox, StopSandbox, StartSandbox, DeleteSandbox, RenewSandboxLease, ExecSandbox. */
    OPERATOR,
    /** And UpdateSandboxPolicy. */
    ADMIN;

    boolean includes(Role other) {
        return compareTo(other) >= 0;
    }

    static Role parse(String text) {
        try {
            return valueOf(text.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("role must be viewer, operator or admin, got '" + text + "'");
        }
    }

    /**
     * The role a SandboxService method needs; every method of the service is listed. A method added to the service
     * and not listed here needs admin in every workspace ({@code *}) until it is: closed by default.
     */
    static Role required(String method) {
        return ApiMethod.ofWireName(method).map(Role::required).orElse(ADMIN);
    }

    /** The role a method of the service needs (the switch covers every method: the compiler checks it). */
    static Role required(ApiMethod method) {
        return switch (method) {
            case GET_SANDBOX, LIST_SANDBOXES, WATCH_SANDBOXES, GET_OPERATION, GET_SANDBOX_POLICY -> VIEWER;
            case STREAM_SANDBOX_LOGS -> VIEWER;
            case CREATE_SANDBOX, STOP_SANDBOX, START_SANDBOX, DELETE_SANDBOX, RENEW_SANDBOX_LEASE, EXEC_SANDBOX ->
                OPERATOR;
            case UPDATE_SANDBOX_POLICY -> ADMIN;
        };
    }
}
