package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.time.Instant;
import java.util.Optional;

/**
 * A transition whose intent is committed and whose result is not: recovery completes it with exactly this input.
 *
 * @param kind what the driver is to be asked
 * @param operationId identifies this transition in logs
 * @param requestId the request that admitted it, if it carried a request id (completed with the result)
 * @param expectedGeneration for stop and delete, the generation the driver must find on the runtime resource
 * @param since when the intent was committed
 */
public record PendingTransition(
        TransitionKind kind, String operationId, Optional<String> requestId, long expectedGeneration, Instant since) {
    public PendingTransition {
        requireNonNull(kind, "kind is null");
        requireNonNull(operationId, "operationId is null");
        requireNonNull(requestId, "requestId is null");
        requireNonNull(since, "since is null");
    }
}
