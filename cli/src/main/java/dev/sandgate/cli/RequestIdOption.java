package dev.sandgate.cli;

import java.util.UUID;
import picocli.CommandLine.Option;

/** The request_id of a mutating call: the user's, or a fresh UUID so that the call can be looked up afterwards. */
final class RequestIdOption {
    @Option(
            names = "--request-id",
            paramLabel = "UUID",
            description = "Makes the call idempotent: a retry with the same id replays the first result"
                    + " (default: a fresh UUID, printed with the result).")
    String requestId;

    String requestId() {
        if (requestId == null) {
            requestId = UUID.randomUUID().toString();
        }
        return requestId;
    }
}
