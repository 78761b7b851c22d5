package dev.sandgate.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafeByDefaultTest {
    @Test
    @DisplayName("listening on 0.0.0.0 without TLS and an authenticator exits 2 naming --insecure, touching nothing")
    void nonLoopbackWithoutTlsAndAuthExitsTwo(@TempDir Path dir) {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = GatewayMain.run(
                new String[] {
                    "--listen", "0.0.0.0:0", "--data-dir", dir.resolve("data").toString()
                },
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertThat(status).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("--insecure").contains("0.0.0.0");
        assertThat(dir.resolve("data")).doesNotExist();
    }

    @Test
    @DisplayName("TLS without an authenticator is not enough beyond loopback")
    void tlsWithoutAuthenticatorIsRefused() {
        assertThatThrownBy(() -> GatewaySettings.load(
                        new String[] {"--listen", "0.0.0.0:7443", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
                        Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("--insecure");
    }

    @Test
    @DisplayName("--insecure lets the gateway listen beyond loopback, and says so")
    void insecureIsExplicit() {
        GatewaySettings config =
                GatewaySettings.load(new String[] {"--listen", "0.0.0.0:7443", "--insecure"}, Map.of());
        assertThat(config.security().exposedInsecurely(config.listenHost())).isTrue();
    }

    @Test
    @DisplayName("loopback needs neither TLS nor --insecure (the quickstart)")
    void loopbackStaysOpen() {
        GatewaySettings config = GatewaySettings.load(new String[0], Map.of());
        assertThat(config.security().tls()).isFalse();
        assertThat(config.security().exposedInsecurely(config.listenHost())).isFalse();
    }

    @Test
    @DisplayName("an authenticator without an access policy is refused")
    void authenticatorNeedsPolicy() {
        assertThatThrownBy(() -> GatewaySettings.load(new String[] {"--api-token-file", "tokens"}, Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("authz-policy");
    }

    @Test
    @DisplayName("HS256 cannot be allowed for JWTs")
    void symmetricJwtAlgorithmIsRefused() {
        assertThatThrownBy(() -> GatewaySettings.load(
                        new String[] {
                            "--jwt-jwks",
                            "jwks.json",
                            "--jwt-issuer",
                            "i",
                            "--jwt-audience",
                            "a",
                            "--jwt-algorithms",
                            "RS256,HS256",
                            "--authz-policy",
                            "p.json"
                        },
                        Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("HS256");
    }

    @Test
    @DisplayName("a token key file readable by others is made owner-only")
    void tokenKeyFileIsMadeOwnerOnly(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("token-keys.properties");
        dev.sandgate.gateway.token.TokenKeys.loadOrCreate(file);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        dev.sandgate.gateway.token.TokenKeys.loadOrCreate(file);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
                .isEqualTo("rw-------");
    }
}
