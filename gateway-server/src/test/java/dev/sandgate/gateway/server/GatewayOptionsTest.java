package dev.sandgate.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command line as picocli splits it: the same rules as the hand-written parser it replaced. */
class GatewayOptionsTest {
    @TempDir
    Path dir;

    final ByteArrayOutputStream out = new ByteArrayOutputStream();
    final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(Map<String, String> environment, String... args) {
        return GatewayMain.run(
                args,
                environment,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private static GatewaySettings load(String... args) {
        return GatewaySettings.load(args, Map.of());
    }

    @Test
    @DisplayName("an unknown option exits 2 naming it, with its value or after '=', and leaves no data directory")
    void unknownOptionExitsTwo() {
        Path data = dir.resolve("data");

        int spaced = run(Map.of(), "--data-dir", data.toString(), "--lsiten", "127.0.0.1:0");
        int attached = run(Map.of(), "--data-dir", data.toString(), "--lsiten=127.0.0.1:0");

        assertThat(spaced).isEqualTo(2);
        assertThat(attached).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8).lines())
                .containsExactly(
                        "sandgate-gateway: unknown option --lsiten (see --help)",
                        "sandgate-gateway: unknown option --lsiten (see --help)");
        assertThat(data).doesNotExist();
    }

    @Test
    @DisplayName("a word that is not an option is refused as an unexpected argument, exit 2")
    void strayArgumentExitsTwo() {
        assertThat(run(Map.of(), "serve")).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8))
                .isEqualTo("sandgate-gateway: unexpected argument 'serve' (see --help)" + System.lineSeparator());
        assertThatThrownBy(() -> load("--listen", "127.0.0.1:1", "-x"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("unexpected argument '-x' (see --help)");
        assertThatThrownBy(() -> load("-hx")).hasMessage("unexpected argument '-hx' (see --help)");
        assertThatThrownBy(() -> load("--", "--listen", "127.0.0.1:1"))
                .as("after '--' (which picocli takes as the end of the options) nothing is an option")
                .hasMessage("unexpected argument '--listen' (see --help)");
    }

    @Test
    @DisplayName("an option without its value exits 2 naming the option")
    void missingValueExitsTwo() {
        assertThat(run(Map.of(), "--listen")).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8))
                .isEqualTo("sandgate-gateway: --listen needs a value" + System.lineSeparator());
    }

    @Test
    @DisplayName("a value follows its option after a space or '='; a repeated option's last value wins")
    void valueFormsAndRepetition() {
        assertThat(load("--listen=127.0.0.1:1234").listen()).isEqualTo("127.0.0.1:1234");
        assertThat(load("--listen", "127.0.0.1:1", "--listen", "127.0.0.1:2").listen())
                .isEqualTo("127.0.0.1:2");
        assertThat(load("--driver-property", "a.b=1", "--driver-property=a.b=2", "--driver-property", "c.d=x=y")
                        .driverProperties())
                .containsExactlyInAnyOrderEntriesOf(Map.of("a.b", "2", "c.d", "x=y"));
    }

    @Test
    @DisplayName("a value is taken as it is: one beginning with '--' or '@' is not an option nor a file of arguments")
    void valuesAreLiteral() {
        assertThat(load("--driver", "--x").driverName()).contains("--x");
        assertThat(load("--data-dir", "@elsewhere").dataDir()).isEqualTo(Path.of("@elsewhere"));
    }

    @Test
    @DisplayName("a driver property without key=value is refused naming --driver-property")
    void driverPropertyNeedsKeyAndValue() {
        assertThatThrownBy(() -> load("--driver-property", "=x"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("--driver-property takes key=value, got '=x'");
    }

    @Test
    @DisplayName("a flag wins over its SANDGATE_ variable, also a switch given as --insecure=false")
    void flagWinsOverEnvironment() {
        GatewaySettings listen = GatewaySettings.load(
                new String[] {"--listen", "127.0.0.1:2"}, Map.of("SANDGATE_LISTEN", "127.0.0.1:1"));
        GatewaySettings insecure = GatewaySettings.load(
                new String[] {"--insecure"}, Map.of("SANDGATE_INSECURE", "false", "SANDGATE_LISTEN", "0.0.0.0:1"));

        assertThat(listen.listen()).isEqualTo("127.0.0.1:2");
        assertThat(insecure.security().insecure()).isTrue();
        assertThatThrownBy(() -> GatewaySettings.load(
                        new String[] {"--insecure=false"},
                        Map.of("SANDGATE_INSECURE", "true", "SANDGATE_LISTEN", "0.0.0.0:1")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("--insecure");
        assertThat(GatewaySettings.load(
                                new String[0], Map.of("SANDGATE_INSECURE", "yes", "SANDGATE_LISTEN", "0.0.0.0:1"))
                        .security()
                        .insecure())
                .isTrue();
    }

    @Test
    @DisplayName("a switch takes a value only after '=': yes/no/1/0 as in the environment; another is refused by name")
    void switchValues() {
        assertThat(load("--enable-test-faults=yes").testFaultsEnabled()).isTrue();
        assertThat(load("--enable-test-faults=0").testFaultsEnabled()).isFalse();
        assertThatThrownBy(() -> load("--insecure=maybe"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("insecure: must be true or false, got 'maybe'");
        assertThatThrownBy(() -> load("--insecure", "yes"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("unexpected argument 'yes' (see --help)");
    }

    @Test
    @DisplayName("--help and -h list every option and exit 0; every setting is also read from its SANDGATE_ variable")
    void helpListsEveryOption() {
        int help = run(Map.of(), "--help");
        int shortHelp = run(Map.of(), "-h");

        assertThat(help).isZero();
        assertThat(shortHelp).isZero();
        String text = out.toString(StandardCharsets.UTF_8);
        assertThat(GatewayOptions.SETTINGS).hasSize(32);
        for (String setting : GatewayOptions.SETTINGS) {
            assertThat(text).contains("--" + setting + " ");
            String variable = "SANDGATE_" + setting.toUpperCase(Locale.ROOT).replace('-', '_');
            assertThat(GatewaySettings.unknownEnvironment(Map.of(variable, "x")))
                    .as(variable)
                    .isEmpty();
        }
        assertThat(text)
                .contains(
                        "--config FILE",
                        "--driver-property KEY=VALUE",
                        "--rotate-token-key",
                        "-h, --help",
                        "--version",
                        "\nSecurity (",
                        "\nTest switches (");
        assertThat(err.toString(StandardCharsets.UTF_8)).isEmpty();
    }

    @Test
    @DisplayName("--help with a bad setting still refuses it, exit 2, as before")
    void helpDoesNotHideABadSetting() {
        assertThat(run(Map.of(), "--help", "--listen", "nowhere")).isEqualTo(2);
        assertThat(out.toString(StandardCharsets.UTF_8)).isEmpty();
    }
}
