package dev.sandgate.gateway.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.testing.EngineTest;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real Prometheus (started by scripts/engines/prometheus.sh, which exports SANDGATE_PROMETHEUS_URL and
 * SANDGATE_PROMETHEUS_TARGETS) scrapes a gateway's metrics port, and its HTTP API answers a query for a lifecycle
 * counter. Without Prometheus the test is skipped, unless engines are required (CI), where it fails.
 */
@EngineTest
class PrometheusScrapeTest {
    @TempDir
    Path root;

    @Test
    void prometheusScrapesTheGatewayAndAnswersForItsTransitionCounter() throws Exception {
        String url = System.getenv("SANDGATE_PROMETHEUS_URL");
        String targets = System.getenv("SANDGATE_PROMETHEUS_TARGETS");
        if (url == null || targets == null) {
            assertThat(Boolean.getBoolean("sandgate.requireEngines"))
                    .as(
                            "SANDGATE_PROMETHEUS_URL and SANDGATE_PROMETHEUS_TARGETS are set (scripts/engines/prometheus.sh)")
                    .isFalse();
            Assumptions.abort("no Prometheus: run scripts/test, which starts one");
        }
        String run = UUID.randomUUID().toString();
        Path target = Path.of(targets, "gateway-" + run + ".json");
        try (TestGateway gateway = TestGateway.start(
                        root,
                        TestGateway.Transport.IN_PROCESS,
                        FakeDriver.allCapabilities(),
                        "--metrics-listen",
                        "127.0.0.1:0");
                HttpClient http = HttpClient.newHttpClient()) {
            gateway.create("scraped", "one");
            gateway.create("scraped", "two");
            int port = ((PrometheusMetrics) gateway.gateway().operability().observer()).port();
            Path written = Files.writeString(
                    Path.of(targets, "." + run + ".tmp"),
                    "[{\"targets\":[\"127.0.0.1:" + port + "\"],\"labels\":{\"run\":\"" + run + "\"}}]\n");
            Files.move(written, target, StandardCopyOption.ATOMIC_MOVE);

            String query = "sandgate_lifecycle_transitions_total{run=\"" + run
                    + "\",operation=\"create\",outcome=\"CREATED\"}";
            URI uri = URI.create(url + "/api/v1/query?query=" + URLEncoder.encode(query, StandardCharsets.UTF_8));
            await().atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(500))
                    .untilAsserted(() -> {
                        HttpResponse<String> response =
                                http.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString());
                        assertThat(response.statusCode()).isEqualTo(200);
                        JsonArray result = JsonParser.parseString(response.body())
                                .getAsJsonObject()
                                .getAsJsonObject("data")
                                .getAsJsonArray("result");
                        assertThat(result).hasSize(1);
                        JsonObject sample = result.get(0).getAsJsonObject();
                        assertThat(sample.getAsJsonArray("value").get(1).getAsString())
                                .isEqualTo("2");
                    });
        } finally {
            Files.deleteIfExists(target);
        }
    }
}
