package dev.sandgate.gateway.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class MalformedRequestLogTest {
    private final AtomicLong now = new AtomicLong(1_000);
    private final List<String> lines = new ArrayList<>();
    private final MalformedRequestLog log = new MalformedRequestLog(now::get, Duration.ofSeconds(10), lines::add);

    @Test
    @DisplayName("a burst of malformed requests logs one line; the next line after the interval counts the rest")
    void burstLogsOneLineThenCountsTheRest() {
        for (int i = 0; i < 1000; i++) {
            log.refused("svc/Create", "127.0.0.1:1234", "Protocol message had invalid UTF-8.");
        }
        assertThat(lines)
                .containsExactly("refused a malformed request to svc/Create from 127.0.0.1:1234: Protocol message had"
                        + " invalid UTF-8.");

        now.addAndGet(Duration.ofSeconds(11).toNanos());
        log.refused("svc/Stop", "127.0.0.1:1235", "truncated.");

        assertThat(lines).hasSize(2);
        assertThat(lines.get(1))
                .isEqualTo("refused a malformed request to svc/Stop from 127.0.0.1:1235: truncated. (and 999 more in"
                        + " the last 11 s, not logged)");
    }
}
