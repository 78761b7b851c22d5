package dev.sandgate.gateway.lifecycle;

import dev.sandgate.gateway.metrics.GatewayObserver;
import dev.sandgate.gateway.store.PendingTransition;
import dev.sandgate.gateway.store.SandboxRecord;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * The one line each lifecycle transition ends with, and its count for the metrics. The line keeps the fields a
 * reader greps for first ({@code transition sandbox=ID op=OP}) and carries every field also as a key-value pair, which
 * the JSON log format writes as a field of its own.
 */
final class TransitionLog {
    /** Under the lifecycle's name: operators filter on it (docs/operations.md, "Logs"). */
    private static final Logger log = LoggerFactory.getLogger(Lifecycle.class);

    private TransitionLog() {}

    /**
     * @param outcome the outcome's name, or PENDING / FAILED
     * @param detail the driver's code for PENDING, the error reason for FAILED
     * @param cause why a transition stays pending (the driver's message)
     * @param requestId the client's request_id, if it sent one
     */
    static void record(
            GatewayObserver observer,
            SandboxRecord row,
            String operation,
            String operationId,
            String outcome,
            Optional<String> detail,
            Optional<String> cause,
            Optional<String> requestId,
            long nanos) {
        observer.transition(operation, outcome, nanos);
        if (!log.isInfoEnabled()) {
            return;
        }
        String shownOutcome = detail.map(d -> outcome + "(" + d + ")").orElse(outcome);
        long millis = TimeUnit.NANOSECONDS.toMillis(nanos);
        LoggingEventBuilder line = log.atInfo()
                .addKeyValue("sandbox_id", row.id())
                .addKeyValue("workspace", row.workspace())
                .addKeyValue("name", row.name())
                .addKeyValue("operation", operation)
                .addKeyValue("generation", row.generation())
                .addKeyValue("outcome", shownOutcome)
                .addKeyValue("duration_ms", millis)
                .addKeyValue("operation_id", operationId)
                .addKeyValue("request_id", requestId.orElse(""));
        if (cause.isPresent()) {
            line = line.addKeyValue("cause", cause.get());
        }
        line.log(
                "transition sandbox={} op={} generation={} outcome={} durationMs={} operation={} workspace={} name={}"
                        + " request_id={}{}",
                row.id(),
                operation,
                row.generation(),
                shownOutcome,
                millis,
                operationId,
                row.workspace(),
                row.name(),
                requestId.orElse("-"),
                cause.map(c -> " cause=\"" + c.replace("\"", "'") + "\"").orElse(""));
    }

    /** A transition of a pending intent. */
    static void record(
            GatewayObserver observer,
            SandboxRecord row,
            PendingTransition t,
            String operation,
            String outcome,
            Optional<String> cause,
            long startedNanos) {
        int open = outcome.indexOf('(');
        record(
                observer,
                row,
                operation,
                t.operationId(),
                open < 0 ? outcome : outcome.substring(0, open),
                open < 0 ? Optional.empty() : Optional.of(outcome.substring(open + 1, outcome.length() - 1)),
                cause,
                t.requestId(),
                System.nanoTime() - startedNanos);
    }
}
