package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.time.Instant;
import java.util.Optional;

/**
 * The idempotency record of one request id: the first admission, its fingerprint, the target it resolved to and,
 * once finished, its result.
 *
 * @param requestId the client's request id (a UUID)
 * @param method the gRPC method name
 * @param fingerprint a digest of the request's content (without the request id)
 * @param sandboxId the sandbox the request resolved to, if any
 * @param generation the execution generation it resolved to (0 if none)
 * @param result the result, once the request is finished; empty while its transition is pending
 * @param createTime when it was admitted
 * @param completeTime when it finished
 * @param principal the principal that first used the request id ({@code ""}: anonymous); no other may replay it
 */
public record RequestRecord(
        String requestId,
        String method,
        String fingerprint,
        Optional<String> sandboxId,
        long generation,
        Optional<RequestResult> result,
        Instant createTime,
        Optional<Instant> completeTime,
        String principal) {
    /** A request of the anonymous principal (a gateway without authentication). */
    public RequestRecord(
            String requestId,
            String method,
            String fingerprint,
            Optional<String> sandboxId,
            long generation,
            Optional<RequestResult> result,
            Instant createTime,
            Optional<Instant> completeTime) {
        this(requestId, method, fingerprint, sandboxId, generation, result, createTime, completeTime, "");
    }

    public RequestRecord {
        requireNonNull(principal, "principal is null");
        requireNonNull(requestId, "requestId is null");
        requireNonNull(method, "method is null");
        requireNonNull(fingerprint, "fingerprint is null");
        requireNonNull(sandboxId, "sandboxId is null");
        requireNonNull(result, "result is null");
        requireNonNull(createTime, "createTime is null");
        requireNonNull(completeTime, "completeTime is null");
    }

    public boolean done() {
        return result.isPresent();
    }
}
