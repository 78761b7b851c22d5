package dev.sandgate.gateway.security;

import com.google.gson.JsonObject;
import java.time.Clock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One JSON line per mutating call and per refused call, on the logger {@code sandgate.audit} (route it to its own file
 * in conf/logback.xml). Never a secret: no token, no key, no request payload beyond the names below.
 */
final class AuditLog {
    static final String LOGGER = "sandgate.audit";
    private static final Logger log = LoggerFactory.getLogger(LOGGER);

    private final Clock clock;

    AuditLog(Clock clock) {
        this.clock = clock;
    }

    /** One audited call. {@code reason} is the ErrorInfo reason (or the authenticator's refusal); empty when OK. */
    record Entry(
            Principal principal,
            String method,
            CallFacts facts,
            String sandboxId,
            String outcome,
            String reason,
            String detail) {}

    void record(Entry entry) {
        JsonObject line = new JsonObject();
        line.addProperty("time", clock.instant().toString());
        line.addProperty("principal", entry.principal().name());
        line.addProperty("auth", entry.principal().method());
        line.addProperty("method", entry.method());
        line.addProperty("workspace", entry.facts().workspace());
        line.addProperty("name", entry.facts().name());
        line.addProperty(
                "sandbox_id", entry.sandboxId().isEmpty() ? entry.facts().sandboxId() : entry.sandboxId());
        line.addProperty("request_id", entry.facts().requestId());
        line.addProperty("outcome", entry.outcome());
        line.addProperty("reason", entry.reason());
        if (!entry.detail().isEmpty()) {
            line.addProperty("detail", entry.detail());
        }
        log.info("{}", line);
    }
}
