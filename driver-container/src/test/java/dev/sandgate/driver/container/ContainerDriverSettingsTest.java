package dev.sandgate.driver.container;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ContainerDriverSettingsTest {
    private static final String DEFAULT_HOST = "unix:///var/run/docker.sock";

    private static ContainerDriverSettings read(DriverSettings config, Map<String, String> environment) {
        return ContainerDriverSettings.from(config, "docker", DEFAULT_HOST, "DOCKER_HOST", environment);
    }

    private static DriverException refused(DriverSettings config) {
        DriverException refused = catchThrowableOfType(DriverException.class, () -> read(config, Map.of()));
        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        return refused;
    }

    @Test
    void theHostKeyWinsOverTheEnvironmentWhichWinsOverTheDefault() {
        var environment = Map.of("DOCKER_HOST", "unix:///from/env.sock");
        var configured = DriverSettings.EMPTY.with("docker.host", "tcp://127.0.0.1:2375");

        assertThat(read(configured, environment).host()).isEqualTo(URI.create("tcp://127.0.0.1:2375"));
        assertThat(read(configured, environment).hostSource()).isEqualTo("docker.host");
        assertThat(read(DriverSettings.EMPTY, environment).host()).isEqualTo(URI.create("unix:///from/env.sock"));
        assertThat(read(DriverSettings.EMPTY, environment).hostSource()).isEqualTo("DOCKER_HOST");
        assertThat(read(DriverSettings.EMPTY, Map.of()).host()).isEqualTo(URI.create(DEFAULT_HOST));
        assertThat(read(DriverSettings.EMPTY, Map.of()).hostSource()).isEqualTo("default");
    }

    @Test
    void defaultsSpeakApi141AndStopWithTenSecondsOfGrace() {
        ContainerDriverSettings settings = read(DriverSettings.EMPTY, Map.of());

        assertThat(settings.apiVersion()).isEqualTo("1.41");
        assertThat(settings.stopGracePeriod()).isEqualTo(Duration.ofSeconds(10));
        assertThat(settings.stopGraceSeconds()).isEqualTo(10);
        assertThat(settings.tlsCertPath()).isEmpty();
    }

    @Test
    void aGracePeriodWithAFractionOfASecondIsRoundedUpForTheEngine() {
        var config = DriverSettings.EMPTY.with("docker.stop-grace-period", "1500ms");

        assertThat(read(config, Map.of()).stopGraceSeconds()).isEqualTo(2);
    }

    @Test
    void aHostThatIsNeitherUnixNorTcpIsRefusedNamingTheKey() {
        assertThat(refused(DriverSettings.EMPTY.with("docker.host", "http://127.0.0.1:2375"))
                        .getMessage())
                .startsWith("docker.host:");
        assertThat(refused(DriverSettings.EMPTY.with("docker.host", "tcp://127.0.0.1"))
                        .getMessage())
                .startsWith("docker.host:");
        assertThat(refused(DriverSettings.EMPTY.with("docker.host", "unix://")).getMessage())
                .startsWith("docker.host:");
    }

    @Test
    void aMalformedEnvironmentHostIsRefusedNamingTheVariable() {
        DriverException refused = catchThrowableOfType(
                DriverException.class, () -> read(DriverSettings.EMPTY, Map.of("DOCKER_HOST", "ssh://box")));

        assertThat(refused.getMessage()).startsWith("DOCKER_HOST:");
    }

    @Test
    void malformedSettingsAreRefusedNamingTheKey() {
        assertThat(refused(DriverSettings.EMPTY.with("docker.api-version", "v2"))
                        .getMessage())
                .startsWith("docker.api-version:");
        assertThat(refused(DriverSettings.EMPTY.with("docker.request-timeout", "0s"))
                        .getMessage())
                .startsWith("docker.request-timeout:");
        assertThat(refused(DriverSettings.EMPTY.with("docker.stop-grace-period", "soon"))
                        .getMessage())
                .startsWith("docker.stop-grace-period:");
        assertThat(refused(DriverSettings.EMPTY.with("docker.tls-cert-path", "/certs"))
                        .getMessage())
                .startsWith("docker.tls-cert-path:");
    }
}
