package dev.sandgate.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.gateway.lifecycle.FaultPoint;
import dev.sandgate.gateway.store.SqliteStore;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GatewaySettingsTest {
    @TempDir
    Path dir;

    @Test
    @DisplayName("defaults: loopback 7443, NORMAL durability, 24 h retention, no test faults")
    void defaults() {
        GatewaySettings config = GatewaySettings.load(new String[0], Map.of());

        assertThat(config.listen()).isEqualTo("127.0.0.1:7443");
        assertThat(config.storeSynchronous()).isEqualTo(SqliteStore.Synchronous.NORMAL);
        assertThat(config.requestRetention()).isEqualTo(Duration.ofHours(24));
        assertThat(config.driverName()).isEmpty();
        assertThat(config.testFaultsEnabled()).isFalse();
        assertThat(config.tokenKeyFile()).isEqualTo(config.dataDir().resolve("token-keys.properties"));
    }

    @Test
    @DisplayName("flags win over the environment, which wins over the file; unknown file keys are driver properties")
    void precedence() throws Exception {
        Path file = dir.resolve("gateway.properties");
        Files.writeString(file, """
                listen=127.0.0.1:1111
                driver=file-driver
                data-dir=/from/file
                reference.directory=/file/dir
                docker.host=unix:///file.sock
                """);

        GatewaySettings config = GatewaySettings.load(
                new String[] {
                    "--config",
                    file.toString(),
                    "--listen",
                    "127.0.0.1:3333",
                    "--driver-property",
                    "docker.host=unix:///flag.sock"
                },
                Map.of(
                        "SANDGATE_LISTEN", "127.0.0.1:2222",
                        "SANDGATE_DRIVER", "env-driver",
                        "SANDGATE_DRIVER_PROPERTY_REFERENCE_DIRECTORY", "/env/dir",
                        "HOME", "/ignored"));

        assertThat(config.listen()).isEqualTo("127.0.0.1:3333");
        assertThat(config.driverName()).contains("env-driver");
        assertThat(config.dataDir()).isEqualTo(Path.of("/from/file"));
        assertThat(config.driverProperties())
                .containsEntry("reference.directory", "/env/dir")
                .containsEntry("docker.host", "unix:///flag.sock")
                .doesNotContainKey("listen");
    }

    @Test
    @DisplayName("an unknown flag is refused as unknown, even without a value after it")
    void unknownFlagWithoutValue() {
        assertThatThrownBy(() -> GatewaySettings.load(new String[] {"--verbose"}, Map.of()))
                .hasMessage("unknown option --verbose (see --help)");
    }

    @Test
    @DisplayName("a file key that is neither a gateway setting nor DRIVER.KEY is refused, with a suggestion")
    void misspeltFileKey() throws Exception {
        Path file = dir.resolve("gateway.properties");
        Files.writeString(file, "data_dir=/srv/sandgate\n");

        assertThatThrownBy(() -> GatewaySettings.load(new String[] {"--config", file.toString()}, Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("unknown setting 'data_dir'")
                .hasMessageContaining("did you mean data-dir?");
    }

    @Test
    @DisplayName("an unreadable configuration file is refused with the reason, not just its path")
    void missingConfigFile() {
        assertThatThrownBy(() -> GatewaySettings.load(
                        new String[] {
                            "--config", dir.resolve("absent.properties").toString()
                        },
                        Map.of()))
                .hasMessageContaining("absent.properties: no such file or directory");
    }

    @Test
    @DisplayName("a driver property from the environment may have '-' in its key, written '__'")
    void environmentDriverPropertyWithHyphens() {
        GatewaySettings config = GatewaySettings.load(
                new String[0],
                Map.of(
                        "SANDGATE_DRIVER_PROPERTY_DOCKER_STOP__GRACE__PERIOD", "5s",
                        "SANDGATE_DRIVER_PROPERTY_VM_STATE__DIR", "/var/lib/vms",
                        "SANDGATE_DRIVER_PROPERTY_DOCKER_HOST", "unix:///env.sock"));

        assertThat(config.driverProperties())
                .containsEntry("docker.stop-grace-period", "5s")
                .containsEntry("vm.state-dir", "/var/lib/vms")
                .containsEntry("docker.host", "unix:///env.sock")
                .hasSize(3);
    }

    @Test
    @DisplayName("a fault point is refused unless test faults are explicitly enabled")
    void faultPointNeedsExplicitEnable() {
        assertThatThrownBy(() -> GatewaySettings.load(new String[] {"--fault-point", "stop.after-intent"}, Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("test faults are not enabled");
        assertThatThrownBy(
                        () -> GatewaySettings.load(new String[0], Map.of("SANDGATE_FAULT_POINT", "stop.after-intent")))
                .isInstanceOf(ConfigException.class);

        GatewaySettings enabled = GatewaySettings.load(
                new String[] {"--enable-test-faults", "--fault-point", "stop.after-intent"}, Map.of());

        assertThat(enabled.faultPoint()).contains(FaultPoint.STOP_AFTER_INTENT);
    }

    @Test
    @DisplayName("bad settings are refused naming the setting")
    void badSettings() {
        assertThatThrownBy(() -> GatewaySettings.load(new String[] {"--listen", "nowhere"}, Map.of()))
                .hasMessageContaining("listen");
        assertThatThrownBy(() -> GatewaySettings.load(new String[] {"--request-retention", "soon"}, Map.of()))
                .hasMessageContaining("request-retention");
        assertThatThrownBy(() -> GatewaySettings.load(new String[] {"--store-synchronous", "OFF"}, Map.of()))
                .hasMessageContaining("store-synchronous");
        assertThatThrownBy(() -> GatewaySettings.load(new String[] {"--no-such-flag", "x"}, Map.of()))
                .hasMessageContaining("--no-such-flag");
        assertThatThrownBy(() -> GatewaySettings.load(
                        new String[] {"--enable-test-faults", "--fault-point", "stop.sometime"}, Map.of()))
                .hasMessageContaining("stop.after-intent");
    }

    @Test
    @DisplayName(
            "rotating the token key while a gateway holds the data directory warns that it still signs with the old key")
    void rotationWhileAGatewayRunsWarns() throws Exception {
        Path data = dir.resolve("data");
        Files.createDirectories(data);
        ByteArrayOutputStream idle = new ByteArrayOutputStream();
        ByteArrayOutputStream running = new ByteArrayOutputStream();
        String[] rotate = {"--rotate-token-key", "--data-dir", data.toString()};

        int first = GatewayMain.run(rotate, new PrintStream(idle, true, StandardCharsets.UTF_8), System.err);
        int second;
        try (var channel = java.nio.channels.FileChannel.open(
                        data.resolve("gateway.lock"),
                        java.nio.file.StandardOpenOption.CREATE,
                        java.nio.file.StandardOpenOption.WRITE);
                var lock = channel.lock()) {
            second = GatewayMain.run(rotate, new PrintStream(running, true, StandardCharsets.UTF_8), System.err);
        }

        assertThat(first).isZero();
        assertThat(second).isZero();
        assertThat(idle.toString(StandardCharsets.UTF_8)).contains("rotated").doesNotContain("warning");
        assertThat(running.toString(StandardCharsets.UTF_8))
                .contains("rotated")
                .contains("warning: a gateway is running on " + data);
    }

    @Test
    @DisplayName("GatewayMain refuses a misspelt driver setting (exit 2), naming it, instead of ignoring it")
    void mainRefusesAMisspeltDriverSetting() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);

        int refused = GatewayMain.run(
                new String[] {
                    "--data-dir",
                    dir.resolve("data").toString(),
                    "--listen",
                    "127.0.0.1:0",
                    "--driver",
                    "reference",
                    "--driver-property",
                    "reference.directry=" + dir.resolve("sandboxes")
                },
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                errStream);

        assertThat(refused).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8))
                .contains("driver 'reference' is not available: reference.directry: is not a setting of this driver")
                .contains("reference.directory");
        assertThat(dir.resolve("data"))
                .as("a start refused for its driver leaves no data directory")
                .doesNotExist();
    }

    @Test
    @DisplayName("GatewayMain refuses a fault point without the enable switch (exit 2) and documents its flags")
    void mainRefusesAndDocuments() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream outStream = new PrintStream(out, true, StandardCharsets.UTF_8);
        PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);

        int refused = GatewayMain.run(
                new String[] {"--data-dir", dir.toString(), "--fault-point", "create.after-intent"},
                outStream,
                errStream);
        int help = GatewayMain.run(new String[] {"--help"}, outStream, errStream);

        assertThat(refused).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("refusing fault-point create.after-intent");
        assertThat(help).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8))
                .contains(
                        "--listen",
                        "--data-dir",
                        "--driver",
                        "--driver-property",
                        "--token-key-file",
                        "--enable-test-faults",
                        "--fault-point",
                        "--rotate-token-key");
        assertThat(dir).isEmptyDirectory();
    }
}
