package dev.sandgate.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.DriverConfig;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Drivers on the test class path: the reference driver (priority 0), the remote driver (priority -10, for
 * RemoteDriverRestartTest) and the test fake (priority -1000).
 */
class DriverSelectorTest {
    private static final ClassLoader LOADER = DriverSelectorTest.class.getClassLoader();

    @Test
    @DisplayName("an explicit name selects that driver")
    void explicitName() {
        var config = new DriverConfig(Map.of("fake.directory", "/tmp/x"));

        assertThat(DriverSelector.select(Optional.of("fake"), config, LOADER).name())
                .isEqualTo("fake");
    }

    @Test
    @DisplayName("without a name the available driver with the highest priority wins")
    void highestPriority() {
        var config = new DriverConfig(Map.of("fake.directory", "/tmp/x"));

        assertThat(DriverSelector.select(Optional.empty(), config, LOADER).name())
                .isEqualTo("reference");
    }

    @Test
    @DisplayName("an unavailable named driver is refused with its reason; an unknown name lists the installed ones")
    void unavailableAndUnknown() {
        assertThatThrownBy(() -> DriverSelector.select(Optional.of("fake"), DriverConfig.EMPTY, LOADER))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("fake.directory is not set");
        assertThatThrownBy(() -> DriverSelector.select(Optional.of("nope"), DriverConfig.EMPTY, LOADER))
                .hasMessageContaining("installed: reference, remote, fake");
    }

    @Test
    @DisplayName("when nothing is available the error lists every candidate with its reason")
    void noneAvailable() {
        var config = new DriverConfig(Map.of("reference.directory", "/proc/1/not-writable"));

        assertThatThrownBy(() -> DriverSelector.select(Optional.empty(), config, LOADER))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("no compute driver is available")
                .hasMessageContaining("reference (priority 0): unavailable")
                .hasMessageContaining("fake (priority -1000): unavailable - fake.directory is not set");
    }
}
