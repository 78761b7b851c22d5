package dev.sandgate.gateway.error;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Mismatch;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The one exception the gateway's own code throws: a {@link ErrorReason}, a message without secrets, and structured
 * detail (the offending field, expected-vs-actual mismatches, metadata). The gRPC layer maps it to a status in one
 * place; the lifecycle records it as the result of a request so that a replay answers the same.
 */
public final class GatewayException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    /** A field path as drivers name one ({@code spec.image}, {@code policy.static.memory_limit_bytes}). */
    private static final java.util.regex.Pattern FIELD = java.util.regex.Pattern.compile("[a-z][A-Za-z0-9_.\\[\\]]*");

    /** The subject of a driver's mismatch when the execution it was asked to act in does not run. */
    public static final String RUNNING = "running";

    private final ErrorReason reason;
    private final String field;
    private final List<Mismatch> mismatches;
    private final Map<String, String> metadata;

    public GatewayException(
            ErrorReason reason, String message, String field, List<Mismatch> mismatches, Map<String, String> metadata) {
        super(requireNonNull(message, "message is null"));
        this.reason = requireNonNull(reason, "reason is null");
        this.field = field;
        this.mismatches = List.copyOf(requireNonNull(mismatches, "mismatches is null"));
        this.metadata = Map.copyOf(requireNonNull(metadata, "metadata is null"));
    }

    public GatewayException(ErrorReason reason, String message) {
        this(reason, message, null, List.of(), Map.of());
    }

    public ErrorReason reason() {
        return reason;
    }

    /** The request field at fault (for {@link ErrorReason#INVALID_FIELD}), e.g. {@code target.name}. */
    public Optional<String> field() {
        return Optional.ofNullable(field);
    }

    public List<Mismatch> mismatches() {
        return mismatches;
    }

    /** Extra machine-readable detail for the ErrorInfo metadata, sorted by key. */
    public Map<String, String> metadata() {
        return new TreeMap<>(metadata);
    }

    public static GatewayException invalidField(String field, String problem) {
        return new GatewayException(ErrorReason.INVALID_FIELD, field + ": " + problem, field, List.of(), Map.of());
    }

    public static GatewayException withMismatch(ErrorReason reason, String message, Mismatch mismatch) {
        return new GatewayException(reason, message, null, List.of(mismatch), Map.of());
    }

    /**
     * The gateway's reading of a driver's refusal. INVALID_ARGUMENT keeps the field the driver named (its messages
     * are {@code field: problem}).
     */
    public static GatewayException fromDriver(DriverException e) {
        String message = "driver: " + e.getMessage();
        return switch (e.code()) {
            case INVALID_ARGUMENT -> {
                String text = e.getMessage();
                int colon = text.indexOf(": ");
                String field =
                        colon > 0 && FIELD.matcher(text.substring(0, colon)).matches()
                                ? text.substring(0, colon)
                                : "request";
                yield new GatewayException(ErrorReason.INVALID_FIELD, message, field, List.of(), Map.of());
            }
            case NOT_FOUND -> new GatewayException(ErrorReason.RUNTIME_MISSING, message);
            case ALREADY_EXISTS -> new GatewayException(ErrorReason.RUNTIME_ALREADY_EXISTS, message);
            case FAILED_PRECONDITION ->
                new GatewayException(ErrorReason.RUNTIME_CONFLICT, message, null, e.mismatches(), Map.of());
            case UNSUPPORTED -> new GatewayException(ErrorReason.DRIVER_CAPABILITY_MISSING, message);
            case ABORTED -> new GatewayException(ErrorReason.DRIVER_ABORTED, message);
            case UNAVAILABLE, DEADLINE_EXCEEDED -> new GatewayException(ErrorReason.DRIVER_UNAVAILABLE, message);
            case INTERNAL -> new GatewayException(ErrorReason.DRIVER_INTERNAL, message);
        };
    }

    /**
     * The gateway's reading of a driver's refusal of a call pinned to one execution (exec, logs): a {@code generation}
     * mismatch is STALE_EXECUTION (the execution named is no longer the resource's), a {@code running} mismatch is
     * NOT_RUNNING, UNSUPPORTED is CAPABILITY_UNSUPPORTED; anything else reads as {@link #fromDriver}.
     */
    public static GatewayException fromPinnedCall(DriverException e) {
        String message = "driver: " + e.getMessage();
        return switch (e.code()) {
            case FAILED_PRECONDITION -> {
                boolean generation =
                        e.mismatches().stream().anyMatch(m -> m.subject().equals(Mismatch.GENERATION));
                boolean running =
                        e.mismatches().stream().anyMatch(m -> m.subject().equals(RUNNING));
                yield generation
                        ? new GatewayException(ErrorReason.STALE_EXECUTION, message, null, e.mismatches(), Map.of())
                        : running
                                ? new GatewayException(ErrorReason.NOT_RUNNING, message, null, e.mismatches(), Map.of())
                                : fromDriver(e);
            }
            case UNSUPPORTED -> new GatewayException(ErrorReason.CAPABILITY_UNSUPPORTED, message);
            case INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, ABORTED, UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL ->
                fromDriver(e);
        };
    }

    /**
     * Whether a driver failure leaves the transition pending, to be retried: the SPI's one rule, {@link
     * DriverErrorCode#isTransient()}. A permanent failure ends the transition with it as the cause.
     */
    public static boolean isTransient(DriverErrorCode code) {
        return code.isTransient();
    }
}
