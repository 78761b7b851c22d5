package dev.sandgate.gateway.grpc;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reports refused malformed requests in one short line each, at most one line per {@link #DEFAULT_INTERVAL}: a client
 * sending garbage cannot flood the log. The line after a quiet spell counts the refusals it did not report.
 */
public final class MalformedRequestLog {
    public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(10);

    private static final Logger log = LoggerFactory.getLogger(MalformedRequestLog.class);

    private final LongSupplier nanoTime;
    private final long intervalNanos;
    private final Consumer<String> sink;
    private boolean logged;
    private long lastLine;
    private long unreported;

    MalformedRequestLog(LongSupplier nanoTime, Duration interval, Consumer<String> sink) {
        this.nanoTime = requireNonNull(nanoTime, "nanoTime is null");
        this.intervalNanos = requireNonNull(interval, "interval is null").toNanos();
        this.sink = requireNonNull(sink, "sink is null");
    }

    /** Writes to this class's logger at WARN, at most once per {@link #DEFAULT_INTERVAL}. */
    public static MalformedRequestLog toLogger() {
        return new MalformedRequestLog(System::nanoTime, DEFAULT_INTERVAL, log::warn);
    }

    void refused(String method, String remoteAddress, String reason) {
        String line;
        synchronized (this) {
            long now = nanoTime.getAsLong();
            if (logged && now - lastLine < intervalNanos) {
                unreported++;
                return;
            }
            line = "refused a malformed request to " + method + " from " + remoteAddress + ": " + reason
                    + (unreported > 0
                            ? " (and " + unreported + " more in the last "
                                    + Duration.ofNanos(now - lastLine).toSeconds() + " s, not logged)"
                            : "");
            logged = true;
            lastLine = now;
            unreported = 0;
        }
        sink.accept(line);
    }
}
