package dev.sandgate.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.sandgate.gateway.metrics.PrometheusMetrics;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.FakeDriverProvider;
import dev.sandgate.spi.Availability;
import dev.sandgate.testing.StoreSchema;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Readiness follows the driver's engine check; liveness (the whole server's health) stays on the process. The metrics
 * port's HTTP probes answer the same.
 */
class EngineReadinessTest {
    private StoreSchema schema;

    @BeforeEach
    void storeOfThisRun() throws Exception {
        schema = StoreSchema.forThisRun();
    }

    @AfterEach
    void dropStore() {
        StoreSchema.closeIfAny(schema);
    }

    @TempDir
    Path root;

    @Test
    void theSandboxServiceIsNotServingWhileTheEngineIsUnavailableAndServingOnceItAnswers() {
        AtomicBoolean engineUp = new AtomicBoolean(true);
        GatewaySettings config = GatewaySettings.load(
                StoreSchema.withStore(
                        schema, "--data-dir", root.resolve("data").toString(), "--readiness-interval", "50ms"),
                Map.of());
        String name = "readiness-" + UUID.randomUUID();
        try (Gateway gateway = Gateway.open(
                        config,
                        Clock.systemUTC(),
                        () -> engineUp.get()
                                ? Availability.available("up")
                                : Availability.unavailable("engine socket refused"),
                        (gatewayId, clock) -> new Gateway.NamedDriver(
                                FakeDriverProvider.NAME,
                                new FakeDriver(root.resolve("backend"), gatewayId, FakeDriver.allCapabilities())));
                GatewayServer server = GatewayServer.start(gateway, InProcessServerBuilder.forName(name))) {
            ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
            try {
                HealthGrpc.HealthBlockingStub health = HealthGrpc.newBlockingStub(channel);
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> status(health, "sandgate.v1.SandboxService") == ServingStatus.SERVING);

                engineUp.set(false);
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> status(health, "sandgate.v1.SandboxService") == ServingStatus.NOT_SERVING);
                assertThat(status(health, "")).as("liveness").isEqualTo(ServingStatus.SERVING);

                engineUp.set(true);
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> status(health, "sandgate.v1.SandboxService") == ServingStatus.SERVING);
            } finally {
                channel.shutdownNow();
            }
        }
    }

    @Test
    void theMetricsPortsHttpProbesFollowTheSameChecks() throws Exception {
        AtomicBoolean engineUp = new AtomicBoolean(true);
        GatewaySettings config = GatewaySettings.load(
                StoreSchema.withStore(
                        schema,
                        "--data-dir",
                        root.resolve("data").toString(),
                        "--readiness-interval",
                        "50ms",
                        "--metrics-listen",
                        "127.0.0.1:0"),
                Map.of());
        String name = "probes-" + UUID.randomUUID();
        try (Gateway gateway = Gateway.open(
                        config,
                        Clock.systemUTC(),
                        () -> engineUp.get()
                                ? Availability.available("up")
                                : Availability.unavailable("engine socket refused"),
                        (gatewayId, clock) -> new Gateway.NamedDriver(
                                FakeDriverProvider.NAME,
                                new FakeDriver(root.resolve("backend"), gatewayId, FakeDriver.allCapabilities())));
                HttpClient http = HttpClient.newHttpClient()) {
            int port = ((PrometheusMetrics) gateway.operability().observer()).port();
            assertThat(get(http, port, "/readyz")).as("before the API serves").isEqualTo(503);
            assertThat(get(http, port, "/livez")).as("before the API serves").isEqualTo(503);
            GatewayServer server = GatewayServer.start(gateway, InProcessServerBuilder.forName(name));
            try {
                await().atMost(Duration.ofSeconds(10)).until(() -> get(http, port, "/readyz") == 200);
                engineUp.set(false);
                await().atMost(Duration.ofSeconds(10)).until(() -> get(http, port, "/readyz") == 503);
                assertThat(get(http, port, "/livez")).as("liveness").isEqualTo(200);
                engineUp.set(true);
                await().atMost(Duration.ofSeconds(10)).until(() -> get(http, port, "/readyz") == 200);
            } finally {
                server.close();
            }
            assertThat(get(http, port, "/readyz")).as("after shutdown").isEqualTo(503);
            assertThat(get(http, port, "/livez")).as("after shutdown").isEqualTo(503);
        }
    }

    private static int get(HttpClient http, int port, String path) throws Exception {
        return http.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                                .build(),
                        HttpResponse.BodyHandlers.discarding())
                .statusCode();
    }

    private static ServingStatus status(HealthGrpc.HealthBlockingStub health, String service) {
        return health.check(HealthCheckRequest.newBuilder().setService(service).build())
                .getStatus();
    }
}
