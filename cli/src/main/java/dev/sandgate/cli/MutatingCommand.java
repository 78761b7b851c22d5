package dev.sandgate.cli;

import java.util.UUID;
import picocli.CommandLine.Option;

/**
 * A command that changes something. It sends a request_id (the user's, or a fresh UUID) so that the call can be
 * retried idempotently and looked up afterwards, and prints it: with the result, or with the error when the call
 * failed (perhaps after the gateway acted on it).
 */
abstract class MutatingCommand extends SandgateCommand {
    @Option(
            names = "--request-id",
            paramLabel = "UUID",
            description = "Makes the call idempotent: a retry with the same id replays the first result"
                    + " (default: a fresh UUID, printed with the result or the error).")
    String givenRequestId;

    private String requestId;

    /** The request_id of this call: the same every time it is asked for. */
    final String requestId() {
        if (requestId == null) {
            requestId =
                    givenRequestId != null ? givenRequestId : UUID.randomUUID().toString();
        }
        return requestId;
    }

    @Override
    final String sentRequestId() {
        return requestId();
    }
}
