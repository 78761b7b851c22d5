package dev.sandgate.gateway.security;

import java.util.Locale;

/** What a principal may do in a workspace; each role includes the ones before it. */
enum Role {
    /** GetSandbox, ListSandboxes, WatchSandboxes, GetOperation, GetSandboxPolicy. */
    VIEWER,
    /** And CreateSandbox, StopSandbox, StartSandbox, DeleteSandbox. */
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
        return switch (method) {
            case "GetSandbox", "ListSandboxes", "WatchSandboxes", "GetOperation", "GetSandboxPolicy" -> VIEWER;
            case "CreateSandbox", "StopSandbox", "StartSandbox", "DeleteSandbox" -> OPERATOR;
            default -> ADMIN;
        };
    }
}
