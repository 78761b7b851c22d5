package dev.sandgate.driver.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The host's --listen options: TCP only with mutual TLS, a Unix socket without TLS; errors name the option. */
class DriverHostOptionsTest {
    @TempDir
    Path directory;

    private DriverHost.Listen listen(String... args) {
        return DriverHostMain.listen(DriverHostMain.parse(args));
    }

    private DriverException refused(String... args) {
        DriverException refused = catchThrowableOfType(DriverException.class, () -> listen(args));
        assertThat(refused).as("refused").isNotNull();
        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        return refused;
    }

    private Path file(String name) throws IOException {
        return Files.writeString(directory.resolve(name), "pem");
    }

    @Test
    void plaintextTcpIsRefusedOnLoopbackToo() {
        assertThat(refused("--listen", "127.0.0.1:7000").getMessage())
                .contains("--listen 127.0.0.1:7000", "only with mutual TLS", "--tls-certificate", "--tls-trust");
        assertThat(refused("--listen", "0.0.0.0:7000").getMessage()).contains("only with mutual TLS");
    }

    @Test
    void tcpWithoutTheClientAuthorityIsRefused() throws IOException {
        String certificate = file("host.crt").toString();
        String key = file("host.key").toString();

        assertThat(refused("--listen", "[::1]:7000", "--tls-certificate", certificate, "--tls-key", key)
                        .getMessage())
                .contains("missing --tls-trust")
                .doesNotContain("--tls-key,");
    }

    @Test
    void tcpWithTheThreeTlsFilesListensWithMutualTls() throws IOException {
        Path certificate = file("host.crt");
        Path key = file("host.key");
        Path trust = file("gateways.crt");

        DriverHost.Listen listen = listen(
                "--listen",
                "[::1]:7000",
                "--tls-certificate",
                certificate.toString(),
                "--tls-key",
                key.toString(),
                "--tls-trust",
                trust.toString());

        assertThat(listen).isEqualTo(new DriverHost.Listen.Tcp("::1", 7000, certificate, key, trust));
    }

    @Test
    void anUnreadableTlsFileIsRefusedByItsOption() throws IOException {
        assertThat(refused(
                                "--listen",
                                "127.0.0.1:7000",
                                "--tls-certificate",
                                file("host.crt").toString(),
                                "--tls-key",
                                directory.resolve("absent.key").toString(),
                                "--tls-trust",
                                file("gateways.crt").toString())
                        .getMessage())
                .startsWith("--tls-key ")
                .contains("absent.key", "not a readable file");
    }

    @Test
    void aUnixSocketTakesNoTls() throws IOException {
        assertThat(refused(
                                "--listen",
                                "unix:///run/d.sock",
                                "--tls-certificate",
                                file("host.crt").toString())
                        .getMessage())
                .contains("Unix socket", "owner-only");
        assertThat(listen("--listen", "unix:///run/d.sock"))
                .isEqualTo(new DriverHost.Listen.Unix(Path.of("/run/d.sock")));
    }

    @Test
    void aMalformedAddressIsRefused() {
        assertThat(refused("--listen", "127.0.0.1:http").getMessage()).contains("the port must be a number");
        assertThat(refused("--listen", "127.0.0.1:70000").getMessage()).contains("between 0 and 65535");
        assertThat(refused("--listen", "run/d.sock").getMessage()).contains("unix:///absolute/path or host:port");
    }
}
