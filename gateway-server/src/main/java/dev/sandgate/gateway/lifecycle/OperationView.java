package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.store.ErrorRecord;
import dev.sandgate.gateway.store.RequestRecord;
import java.util.Optional;

/**
 * An earlier request, looked up by its request id.
 *
 * @param record the idempotency record
 * @param reply its successful result, if it finished successfully
 * @param error its error, if it failed
 */
public record OperationView(RequestRecord record, Optional<MutationReply> reply, Optional<ErrorRecord> error) {
    public OperationView {
        requireNonNull(record, "record is null");
        requireNonNull(reply, "reply is null");
        requireNonNull(error, "error is null");
    }
}
