package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.spi.Mismatch;
import java.util.List;
import java.util.Map;

/**
 * A recorded error result, so that a replay answers exactly what the first attempt answered.
 *
 * @param reason the reason
 * @param message the message (never secrets)
 * @param field the offending field, or null
 * @param mismatches expected-vs-actual details
 * @param metadata extra detail
 */
public record ErrorRecord(
        ErrorReason reason, String message, String field, List<Mismatch> mismatches, Map<String, String> metadata) {
    public ErrorRecord {
        requireNonNull(reason, "reason is null");
        requireNonNull(message, "message is null");
        mismatches = List.copyOf(requireNonNull(mismatches, "mismatches is null"));
        metadata = Map.copyOf(requireNonNull(metadata, "metadata is null"));
    }

    public static ErrorRecord of(GatewayException e) {
        return new ErrorRecord(e.reason(), e.getMessage(), e.field().orElse(null), e.mismatches(), e.metadata());
    }

    public GatewayException toException() {
        return new GatewayException(reason, message, field, mismatches, metadata);
    }
}
