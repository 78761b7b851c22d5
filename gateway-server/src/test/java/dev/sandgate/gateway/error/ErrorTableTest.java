package dev.sandgate.gateway.error;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.gateway.grpc.ErrorMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** docs/api.md's error table lists every reason the gateway can emit, with the code the mapper gives it. */
class ErrorTableTest {
    private static final Pattern ROW = Pattern.compile("^\\|.*\\| `([A-Z_]+)` \\| `([A-Z_]+)` \\|$");

    private static Map<String, String> documentedReasons() throws IOException {
        Path doc = Path.of(System.getProperty("user.dir"))
                .resolve("../docs/api.md")
                .normalize();
        Map<String, String> reasons = new LinkedHashMap<>();
        for (String line : Files.readAllLines(doc, StandardCharsets.UTF_8)) {
            Matcher row = ROW.matcher(line);
            if (row.matches()) {
                reasons.put(row.group(2), row.group(1));
            }
        }
        return reasons;
    }

    @Test
    @DisplayName("every ErrorReason is in docs/api.md with the gRPC code ErrorMapper assigns, and nothing else is")
    void everyReasonIsDocumentedWithItsCode() throws IOException {
        Map<String, String> documented = documentedReasons();

        Map<String, String> actual = new LinkedHashMap<>();
        Arrays.stream(ErrorReason.values())
                .forEach(reason ->
                        actual.put(reason.name(), ErrorMapper.code(reason).name()));
        assertThat(documented).containsExactlyInAnyOrderEntriesOf(actual);
    }
}
