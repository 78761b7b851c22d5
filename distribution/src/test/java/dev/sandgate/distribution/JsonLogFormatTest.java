package dev.sandgate.distribution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.sandgate.testing.ProcessTest;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** SANDGATE_LOG_FORMAT=json: one JSON object per line, a transition's fields each a field of its own. */
@ProcessTest
class JsonLogFormatTest {
    private static final Pattern REQUEST_ID = Pattern.compile("request id: (\\S+)");

    @TempDir
    Path scratch;

    @Test
    void aTransitionLineIsJsonWithItsWorkspaceNameGenerationAndRequestId() throws Exception {
        try (RunningGateway gateway = RunningGateway.start(scratch, Map.of("SANDGATE_LOG_FORMAT", "json"))) {
            Distribution.Result created = Distribution.run(
                    scratch,
                    "sandgate",
                    "--target",
                    gateway.target(),
                    "--json",
                    "create",
                    "-w",
                    "json",
                    "-n",
                    "one",
                    "--image",
                    "busybox");
            assertThat(created.status()).as(created.err()).isZero();
            Matcher requestId = REQUEST_ID.matcher(created.err());
            assertThat(requestId.find())
                    .as("request id on stderr: %s", created.err())
                    .isTrue();

            JsonObject line = await().atMost(Duration.ofSeconds(10))
                    .until(() -> transitionLine(gateway.log()), Optional::isPresent)
                    .orElseThrow();
            assertThat(line.get("level").getAsString()).isEqualTo("INFO");
            assertThat(line.get("workspace").getAsString()).isEqualTo("json");
            assertThat(line.get("name").getAsString()).isEqualTo("one");
            assertThat(line.get("generation").getAsLong()).isEqualTo(1);
            assertThat(line.get("outcome").getAsString()).isEqualTo("CREATED");
            assertThat(line.get("request_id").getAsString()).isEqualTo(requestId.group(1));
            assertThat(line.has("sandbox_id")).isTrue();
            List<String> lines = gateway.log().lines().filter(l -> !l.isBlank()).toList();
            assertThat(lines).allSatisfy(l -> assertThat(l).startsWith("{").endsWith("}"));
        }
    }

    private static Optional<JsonObject> transitionLine(String log) {
        return log.lines()
                .filter(l -> l.startsWith("{") && l.contains("\"operation\":\"create\""))
                .map(l -> JsonParser.parseString(l).getAsJsonObject())
                .findFirst();
    }
}
