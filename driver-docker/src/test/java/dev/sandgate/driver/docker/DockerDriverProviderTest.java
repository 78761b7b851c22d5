package dev.sandgate.driver.docker;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.DriverSettings;
import java.net.URI;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DockerDriverProviderTest {
    @Test
    void theSocketComesFromTheKeyThenDockerHostThenTheDefault() {
        var provider = new DockerDriverProvider(Map.of("DOCKER_HOST", "tcp://127.0.0.1:2375"));

        assertThat(provider.settings(DriverSettings.EMPTY.with("docker.host", "unix:///x.sock"))
                        .host())
                .isEqualTo(URI.create("unix:///x.sock"));
        assertThat(provider.settings(DriverSettings.EMPTY).host()).isEqualTo(URI.create("tcp://127.0.0.1:2375"));
        assertThat(new DockerDriverProvider(Map.of())
                        .settings(DriverSettings.EMPTY)
                        .host())
                .isEqualTo(URI.create(DockerDriverProvider.DEFAULT_HOST));
    }

    @Test
    void anEngineWithAPodmanComponentIsNotTheDockerEngine() {
        var provider = new DockerDriverProvider(Map.of());

        assertThat(provider.mismatchedEngine(List.of("Podman Engine")))
                .hasValueSatisfying(reason -> assertThat(reason).contains("podman driver"));
        assertThat(provider.mismatchedEngine(List.of("Engine", "containerd", "runc", "docker-init")))
                .isEmpty();
    }
}
