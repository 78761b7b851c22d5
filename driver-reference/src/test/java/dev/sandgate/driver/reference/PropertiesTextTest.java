package dev.sandgate.driver.reference;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.StringReader;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
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
}
