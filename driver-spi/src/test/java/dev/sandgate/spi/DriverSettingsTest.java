package dev.sandgate.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class DriverSettingsTest {
    private static DriverException refusal(Runnable call) {
        DriverException refused = catchThrowableOfType(DriverException.class, call::run);
        assertThat(refused).as("a DriverException").isNotNull();
        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        return refused;
    }

    @Test
    void aBlankValueCountsAsAbsent() {
        var config = new DriverSettings(Map.of("x.blank", "  "));

        assertThat(config.get("x.blank")).isEmpty();
        assertThat(config.get("x.blank", "fallback")).isEqualTo("fallback");
        assertThat(refusal(() -> config.require("x.blank")).getMessage()).isEqualTo("x.blank: is required");
    }

    @Test
    void withReturnsACopyWithOneMoreProperty() {
        DriverSettings config = DriverSettings.EMPTY.with("x.a", "1");

        assertThat(config.with("x.b", "2").properties()).containsOnly(Map.entry("x.a", "1"), Map.entry("x.b", "2"));
        assertThat(config.properties()).containsOnly(Map.entry("x.a", "1"));
        assertThat(DriverSettings.EMPTY.properties()).isEmpty();
    }

    @Test
    void wholeNumbersAreParsedAndErrorsNameTheKey() {
        assertThat(DriverSettings.EMPTY.with("x.n", " 42 ").asLong("x.n", 0)).isEqualTo(42);
        assertThat(DriverSettings.EMPTY.asLong("x.n", 7)).isEqualTo(7);
        assertThat(refusal(() -> DriverSettings.EMPTY.with("x.n", "4x").asLong("x.n", 0))
                        .getMessage())
                .startsWith("x.n: ");
    }

    @ParameterizedTest
    @CsvSource({"true,true", "YES,true", "1,true", "false,false", "no,false", "0,false"})
    void booleansAreParsed(String value, boolean expected) {
        assertThat(DriverSettings.EMPTY.with("x.b", value).asBoolean("x.b", !expected))
                .isEqualTo(expected);
    }

    @Test
    void aBooleanThatIsNeitherIsRefusedNamingTheKey() {
        assertThat(refusal(() -> DriverSettings.EMPTY.with("x.b", "maybe").asBoolean("x.b", false))
                        .getMessage())
                .startsWith("x.b: ");
    }

    @ParameterizedTest
    @CsvSource({"500ms,PT0.5S", "10s,PT10S", "2m,PT2M", "1h,PT1H", "PT10S,PT10S", "pt1m,PT1M"})
    void durationsAreParsed(String value, String expected) {
        assertThat(DriverSettings.EMPTY.with("x.d", value).asDuration("x.d", Duration.ZERO))
                .isEqualTo(Duration.parse(expected));
    }

    @ParameterizedTest
    @ValueSource(strings = {"10", "s", "ms", "10S", "ten seconds", "P"})
    void aDurationWithoutAKnownUnitIsRefusedNamingTheKey(String value) {
        assertThat(refusal(() -> DriverSettings.EMPTY.with("x.d", value).asDuration("x.d", Duration.ZERO))
                        .getMessage())
                .startsWith("x.d: ");
    }

    @Test
    void aKeyUnderTheDriversPrefixThatIsNotOneOfItsSettingsIsRefusedNamingItAndTheSettings() {
        var config = new DriverSettings(Map.of("x.host", "h", "x.stop-grace-perod", "5s", "other.key", "v"));

        String message = refusal(() -> config.rejectUnknown("x.", Set.of("x.host", "x.stop-grace-period"), Set.of()))
                .getMessage();

        assertThat(message)
                .startsWith("x.stop-grace-perod: is not a setting of this driver")
                .contains("x.host, x.stop-grace-period");
    }

    @Test
    void knownKeysKeysUnderAnOpenPrefixAndOtherDriversKeysAreAccepted() {
        var config = new DriverSettings(Map.of("x.host", "h", "x.image.small.kernel", "/k", "y.anything", "v"));

        config.rejectUnknown("x.", Set.of("x.host"), Set.of("x.image."));
    }
}
