package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.time.Instant;

/**
 * Something worth knowing about a sandbox.
 *
 * @param type a stable upper-case type ({@link #LAST_OPERATION_FAILED}, {@link #RUNTIME_MISSING}, ...)
 * @param message a short explanation without secrets
 * @param time when it was recorded
 */
public record ConditionRecord(String type, String message, Instant time) {
    public static final String LAST_OPERATION_FAILED = "LAST_OPERATION_FAILED";
    public static final String RUNTIME_MISSING = "RUNTIME_MISSING";
    public static final String RUNTIME_DETAIL = "RUNTIME_DETAIL";
    /** The gateway stopped the execution because its lease expired (the message names the generation and deadline). */
    public static final String EXPIRED = "EXPIRED";

    public ConditionRecord {
        requireNonNull(type, "type is null");
        requireNonNull(message, "message is null");
        requireNonNull(time, "time is null");
    }
}
