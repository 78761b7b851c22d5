package dev.sandgate.gateway.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.gateway.lifecycle.Lifecycle;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import io.grpc.StatusRuntimeException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

class MetricsEndpointTest {
    @TempDir
    Path root;

    private TestGateway gateway;

    @AfterEach
    void close() {
        if (gateway != null) {
            gateway.close();
        }
    }

    private TestGateway withMetrics() {
        gateway = TestGateway.start(
                root, TestGateway.Transport.NETTY, FakeDriver.allCapabilities(), "--metrics-listen", "127.0.0.1:0");
        return gateway;
    }

    private String scrape() throws Exception {
        int port = ((PrometheusMetrics) gateway.gateway().operability().observer()).port();
        try (HttpClient http = HttpClient.newHttpClient()) {
            HttpResponse<String> response = http.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(response.statusCode()).isEqualTo(200);
            return response.body();
        }
    }

    @Test
    void aLifecycleShowsUpInEveryFamilyOfMetrics() throws Exception {
        withMetrics();
        String id = gateway.create("metrics", "one").getId();
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(TestGateway.byId(id))
                        .setRequestId(TestGateway.newRequestId())
                        .build());

        assertThat(scrape())
                .contains("sandgate_lifecycle_transitions_total{operation=\"create\",outcome=\"CREATED\"} 1.0")
                .contains("sandgate_lifecycle_transitions_total{operation=\"stop\",outcome=\"STOPPED_NOW\"} 1.0")
                .contains("sandgate_grpc_server_calls_seconds_count{code=\"OK\","
                        + "method=\"sandgate.v1.SandboxService/CreateSandbox\"} 1")
                .contains("sandgate_grpc_server_calls_seconds_bucket{code=\"OK\","
                        + "method=\"sandgate.v1.SandboxService/CreateSandbox\",le=\"+Inf\"} 1")
                .contains("sandgate_driver_call_duration_seconds_count{driver=\"fake\",operation=\"create\","
                        + "outcome=\"ok\"} 1")
                .containsPattern("sandgate_store_commit_duration_seconds_count\\{outcome=\"committed\"} [1-9]")
                .contains("sandgate_sandboxes{phase=\"STOPPED\"} 1.0")
                .contains("sandgate_lifecycle_pending_transitions 0.0")
                .contains("sandgate_watch_streams_open 0.0")
                .contains("sandgate_engine_available{driver=\"fake\"} 1.0")
                .contains("jvm_memory_used_bytes", "jvm_gc_", "jvm_threads_live_threads", "process_uptime_seconds");
    }

    @Test
    void aPendingTransitionIsCountedAndItsLineCarriesTheCauseAndTheRequestId() throws Exception {
        withMetrics();
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        Logger lifecycle = (Logger) LoggerFactory.getLogger(Lifecycle.class);
        Level level = lifecycle.getLevel();
        lifecycle.setLevel(Level.INFO);
        lifecycle.setAdditive(false);
        lifecycle.addAppender(lines);
        try {
            gateway.driver()
                    .failNext(
                            FakeDriver.Method.CREATE,
                            new DriverException(DriverErrorCode.UNAVAILABLE, "engine socket refused the connection"));
            String requestId = TestGateway.newRequestId();
            try {
                gateway.stub()
                        .createSandbox(TestGateway.createRequest("metrics", "late")
                                .setRequestId(requestId)
                                .build());
            } catch (StatusRuntimeException expected) {
                // TRANSITION_PENDING
            }

            assertThat(scrape())
                    .contains("sandgate_lifecycle_transitions_total{operation=\"create\",outcome=\"PENDING\"} 1.0")
                    .containsPattern("sandgate_lifecycle_retries_total [1-9]")
                    .contains("sandgate_driver_call_duration_seconds_count{driver=\"fake\",operation=\"create\","
                            + "outcome=\"unavailable\"} 1");
            ILoggingEvent pending = lines.list.stream()
                    .filter(e -> e.getFormattedMessage().contains("outcome=PENDING(UNAVAILABLE)"))
                    .findFirst()
                    .orElseThrow();
            assertThat(pending.getFormattedMessage())
                    .contains("workspace=metrics", "name=late", "request_id=" + requestId, "generation=1")
                    .contains("cause=\"engine socket refused the connection\"");
            Map<String, Object> fields = new java.util.HashMap<>();
            pending.getKeyValuePairs().forEach(kv -> fields.put(kv.key, kv.value));
            assertThat(fields)
                    .containsEntry("workspace", "metrics")
                    .containsEntry("name", "late")
                    .containsEntry("request_id", requestId)
                    .containsEntry("cause", "engine socket refused the connection")
                    .containsKeys("sandbox_id", "generation");
        } finally {
            lifecycle.detachAppender(lines);
            lifecycle.setAdditive(true);
            lifecycle.setLevel(level);
        }
    }

    @Test
    void withoutAMetricsAddressNothingIsObserved() {
        gateway = TestGateway.start(root, TestGateway.Transport.IN_PROCESS);

        assertThat(gateway.gateway().operability().observer()).isSameAs(GatewayObserver.NONE);
        assertThat(List.of(gateway.gateway().lifecycle().observer())).containsExactly(GatewayObserver.NONE);
    }
}
