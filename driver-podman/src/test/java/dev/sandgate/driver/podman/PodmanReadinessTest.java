package dev.sandgate.driver.podman;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.sandgate.gateway.server.Gateway;
import dev.sandgate.gateway.server.GatewayServer;
import dev.sandgate.gateway.server.GatewaySettings;
import dev.sandgate.testing.EngineTest;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Readiness with a real engine that goes away: a Podman API service of this test's own, on a socket of its own (the
 * shared service other tests use is left alone), is killed and started again while the gateway runs on it. The health
 * of sandgate.v1.SandboxService follows; the whole server's (liveness) stays SERVING. Prints how long each flip took.
 */
@EngineTest
class PodmanReadinessTest {
    private static final Duration READINESS_INTERVAL = Duration.ofMillis(250);
    private static final String SERVICE = "sandgate.v1.SandboxService";

    @TempDir
    Path root;

    @Test
    void readinessGoesNotServingWhileThePodmanServiceIsDownAndServingWhenItIsBack() throws Exception {
        PodmanTestEngine.ENGINE.requireAvailable();
        Path socket = root.resolve("podman.sock");
        Process podman = startPodmanService(socket);
        String name = "podman-readiness-" + UUID.randomUUID();
        GatewaySettings config = GatewaySettings.load(
                new String[] {
                    "--data-dir",
                    root.resolve("data").toString(),
                    "--driver",
                    "podman",
                    "--driver-property",
                    "podman.host=unix://" + socket,
                    "--readiness-interval",
                    READINESS_INTERVAL.toMillis() + "ms"
                },
                Map.of());
        try (Gateway gateway = Gateway.open(config);
                GatewayServer server = GatewayServer.start(gateway, InProcessServerBuilder.forName(name))) {
            ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
            try {
                HealthGrpc.HealthBlockingStub health = HealthGrpc.newBlockingStub(channel);
                await().atMost(Duration.ofSeconds(30)).until(() -> status(health, SERVICE) == ServingStatus.SERVING);

                long killed = System.nanoTime();
                podman.destroyForcibly().waitFor();
                await().atMost(Duration.ofSeconds(30))
                        .pollInterval(Duration.ofMillis(20))
                        .until(() -> status(health, SERVICE) == ServingStatus.NOT_SERVING);
                long down = System.nanoTime() - killed;
                assertThat(status(health, "")).as("liveness").isEqualTo(ServingStatus.SERVING);

                long restarted = System.nanoTime();
                podman = startPodmanService(socket);
                await().atMost(Duration.ofSeconds(30))
                        .pollInterval(Duration.ofMillis(20))
                        .until(() -> status(health, SERVICE) == ServingStatus.SERVING);
                long up = System.nanoTime() - restarted;
                System.out.printf(
                        "readiness (interval %d ms): NOT_SERVING %d ms after the kill, SERVING %d ms after the restart"
                                + " (service start included)%n",
                        READINESS_INTERVAL.toMillis(),
                        TimeUnit.NANOSECONDS.toMillis(down),
                        TimeUnit.NANOSECONDS.toMillis(up));
            } finally {
                channel.shutdownNow();
            }
        } finally {
            podman.destroyForcibly().waitFor();
        }
    }

    /** {@code podman system service} on {@code socket}, its output in a file beside it; returns once it listens. */
    private Process startPodmanService(Path socket) throws IOException {
        Files.deleteIfExists(socket);
        Process process = new ProcessBuilder("podman", "system", "service", "--time=0", "unix://" + socket)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(
                        root.resolve("podman-service.log").toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                .start();
        await().atMost(Duration.ofSeconds(30)).until(() -> Files.exists(socket) || !process.isAlive());
        assertThat(process.isAlive()).as("podman system service on " + socket).isTrue();
        return process;
    }

    private static ServingStatus status(HealthGrpc.HealthBlockingStub health, String service) {
        return health.withDeadlineAfter(5, TimeUnit.SECONDS)
                .check(HealthCheckRequest.newBuilder().setService(service).build())
                .getStatus();
    }
}
