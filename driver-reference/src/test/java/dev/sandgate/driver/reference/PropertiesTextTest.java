package dev.sandgate.driver.reference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.StringReader;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import org.junit.jupiter.api.Test;

class PropertiesTextTest {
    private static Map<String, String> readBack(String text) throws IOException {
        Properties properties = new Properties();
        properties.load(new StringReader(text));
        var map = new HashMap<String, String>();
        properties.stringPropertyNames().forEach(name -> map.put(name, properties.getProperty(name)));
        return map;
    }

    @Test
    void whatIsWrittenIsReadBackExactlyByPropertiesLoad() throws IOException {
        Map<String, String> tricky = Map.of(
                "plain", "value",
                "label.sandgate.dev/name", "agent-1",
                "with space", " leading and trailing ",
                "separators=:", "a=b:c#d!e",
                "#comment-like", "!also",
                "escapes", "back\\slash\ttab\nnewline\rreturn\fformfeed",
                "unicode", "héllo – 世界 \u0000 \u007f",
                "empty", "",
                "env.PASSWORD", "s3cr=t value\\u0041");

        assertThat(readBack(PropertiesText.of(tricky))).isEqualTo(tricky);
    }

    @Test
    void theTextIsAsciiWithOneLinePerEntryInKeyOrder() {
        String text = PropertiesText.of(Map.of("b", "2", "a", "ü"));

        assertThat(text).isEqualTo("a=\\u00FC\nb=2\n");
    }

    @Test
    void whatIsWrittenIsParsedBackExactly() {
        Map<String, String> tricky = Map.of(
                "plain", "value",
                "with space", " leading and trailing ",
                "separators=:", "a=b:c#d!e",
                "#comment-like", "!also",
                "escapes", "back\\slash\ttab\nnewline\rreturn\fformfeed",
                "unicode", "héllo – 世界 \u0000 \u007f \uD83D\uDE00",
                "empty", "",
                "trailing backslash\\", "value\\");

        assertThat(PropertiesText.parse(PropertiesText.of(tricky))).isEqualTo(tricky);
    }

    @Test
    void randomMapsAreParsedBackExactly() {
        var random = new Random(20261203);
        for (int round = 0; round < 2_000; round++) {
            var map = new HashMap<String, String>();
            int size = random.nextInt(6);
            for (int i = 0; i < size; i++) {
                map.put(randomText(random, 1 + random.nextInt(8)), randomText(random, random.nextInt(12)));
            }

            assertThat(PropertiesText.parse(PropertiesText.of(map)))
                    .as("round %d", round)
                    .isEqualTo(map);
        }
    }

    @Test
    void textOfAnyOtherFormIsReadAsPropertiesLoadReadsIt() throws IOException {
        List<String> texts = List.of(
                "# a comment\na=1\n",
                "! another\n\na=1\n\n",
                "a = 1\n",
                "a:1\nb 2\n",
                "  indented=1\n",
                "continued=one \\\n    two\n",
                "crlf=1\r\nb=2\r\n",
                "continued-by-cr=one\\\r  two\n",
                "only-a-key\n",
                "a=1",
                "a=\\u0041\\u00e9\n",
                "a=1\na=2\n",
                "key\\ with\\=escapes=v\\:x\n",
                "");
        for (String text : texts) {
            assertThat(PropertiesText.parse(text)).as(text).isEqualTo(readBack(text));
        }
    }

    @Test
    void randomTextIsReadAsPropertiesLoadReadsIt() throws IOException {
        // Texts from the characters that matter to the format: separators, escapes, line ends, comments.
        String alphabet = "ab=: \t\\\n\r#!u0Fé";
        var random = new Random(42);
        for (int round = 0; round < 20_000; round++) {
            var text = new StringBuilder();
            int length = random.nextInt(24);
            for (int i = 0; i < length; i++) {
                text.append(alphabet.charAt(random.nextInt(alphabet.length())));
            }
            String input = text.toString();
            Map<String, String> expected;
            try {
                expected = readBack(input);
            } catch (IllegalArgumentException e) {
                assertThatThrownBy(() -> PropertiesText.parse(input))
                        .as("round %d: %s", round, input)
                        .isInstanceOf(IllegalArgumentException.class);
                continue;
            }
            assertThat(PropertiesText.parse(input))
                    .as("round %d: %s", round, input)
                    .isEqualTo(expected);
        }
    }

    private static String randomText(Random random, int length) {
        var text = new StringBuilder();
        for (int i = 0; i < length; i++) {
            text.append(
                    switch (random.nextInt(4)) {
                        case 0 -> (char) ('a' + random.nextInt(26));
                        case 1 -> " =:#!\\\t\n\r\f".charAt(random.nextInt(10));
                        case 2 -> (char) random.nextInt(0x250);
                        default -> (char) random.nextInt(Character.MAX_VALUE + 1);
                    });
        }
        return text.toString();
    }
}
