package dev.sandgate.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Drivers on the test class path: the reference driver (priority 0), the remote driver (priority -10, for
 * RemoteDriverRestartTest) and the test fake (priority -1000), none of which runs anything; the tests add {@link
 * Engine} (priority 30), a driver of an engine, through a class loader of their own.
 */
class DriverSelectorTest {
    private static final ClassLoader LOADER = DriverSelectorTest.class.getClassLoader();
    private static final DriverSettings ENGINE_UP = new DriverSettings(Map.of("engine.up", "true"));

    @TempDir
    Path services;

    URLClassLoader withEngine;

    /** A driver of an engine: available when {@code engine.up} is {@code true}. */
    public static final class Engine implements ComputeDriverProvider {
        @Override
        public String name() {
            return "engine";
        }

        @Override
        public int priority() {
            return 30;
        }

        @Override
        public Availability availability(DriverSettings config) {
            return config.get("engine.up").orElse("false").equals("true")
                    ? Availability.available("the engine answers")
                    : Availability.unavailable("the engine does not answer");
        }

        @Override
        public ComputeDriver create(DriverSettings config, DriverContext context) {
            throw new UnsupportedOperationException();
        }
    }

    @BeforeEach
    void engineOnClassPath() throws IOException {
        Path file = services.resolve("META-INF/services/" + ComputeDriverProvider.class.getName());
        Files.createDirectories(file.getParent());
        Files.writeString(file, Engine.class.getName() + "\n");
        withEngine = new URLClassLoader(new URL[] {services.toUri().toURL()}, LOADER);
    }

    @AfterEach
    void closeLoader() throws IOException {
        withEngine.close();
    }

    @Test
    @DisplayName("an explicit name selects that driver, the reference driver included")
    void explicitName() {
        var config = new DriverSettings(Map.of("fake.directory", "/tmp/x"));

        assertThat(DriverSelector.select(Optional.of("fake"), config, LOADER)
                        .provider()
                        .name())
                .isEqualTo("fake");
        assertThat(DriverSelector.select(Optional.of("reference"), config, withEngine)
                        .provider()
                        .name())
                .isEqualTo("reference");
    }

    @Test
    @DisplayName("without a name the available driver with the highest priority wins; each skipped one says why")
    void highestPriority() {
        DriverSelector.Selection selection = DriverSelector.select(Optional.empty(), ENGINE_UP, withEngine);

        assertThat(selection.provider().name()).isEqualTo("engine");
        assertThat(selection.reason()).contains("the engine answers");
        assertThat(selection.skipped())
                .containsExactly(
                        "reference (priority 0): selected only by name (--driver reference)",
                        "remote (priority -10): selected only by name (--driver remote)",
                        "fake (priority -1000): selected only by name (--driver fake)");
    }

    @Test
    @DisplayName("the reference driver is never selected without its name, even when nothing else is available")
    void referenceNeverAutoSelected() {
        var config = new DriverSettings(Map.of("fake.directory", "/tmp/x"));

        assertThatThrownBy(() -> DriverSelector.select(Optional.empty(), config, withEngine))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("no compute driver is available")
                .hasMessageContaining("engine (priority 30): unavailable - the engine does not answer")
                .hasMessageContaining("reference (priority 0): selected only by name (--driver reference)")
                .hasMessageContaining("fake (priority -1000): selected only by name (--driver fake)");
    }

    @Test
    @DisplayName("an unavailable named driver is refused with its reason; an unknown name lists the installed ones")
    void unavailableAndUnknown() {
        assertThatThrownBy(() -> DriverSelector.select(Optional.of("fake"), DriverSettings.EMPTY, LOADER))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("fake.directory is not set");
        assertThatThrownBy(() -> DriverSelector.select(Optional.of("nope"), DriverSettings.EMPTY, LOADER))
                .hasMessageContaining("installed: reference, remote, fake");
    }

    @Test
    @DisplayName("a named driver's selection lists the other drivers as skipped, not being named")
    void namedSkipsTheOthers() {
        DriverSelector.Selection selection = DriverSelector.select(Optional.of("engine"), ENGINE_UP, withEngine);

        assertThat(selection.reason()).contains("named by the driver setting");
        assertThat(selection.skipped())
                .containsExactly(
                        "reference (priority 0): not named (the driver setting is engine)",
                        "remote (priority -10): not named (the driver setting is engine)",
                        "fake (priority -1000): not named (the driver setting is engine)");
    }
}
