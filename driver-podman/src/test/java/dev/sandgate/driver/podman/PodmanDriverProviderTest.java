package dev.sandgate.driver.podman;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.Availability;
import dev.sandgate.spi.DriverSettings;
import java.net.URI;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PodmanDriverProviderTest {
    @Test
    void theSocketComesFromTheKeyThenContainerHostThenTheRootfulDefault() {
        var provider = new PodmanDriverProvider(Map.of("CONTAINER_HOST", "unix:///run/user/1000/podman/podman.sock"));

        assertThat(provider.settings(DriverSettings.EMPTY.with("podman.host", "unix:///x.sock"))
                        .host())
                .isEqualTo(URI.create("unix:///x.sock"));
        assertThat(provider.settings(DriverSettings.EMPTY).host())
                .isEqualTo(URI.create("unix:///run/user/1000/podman/podman.sock"));
        assertThat(new PodmanDriverProvider(Map.of())
                        .settings(DriverSettings.EMPTY)
                        .host())
                .isEqualTo(URI.create(PodmanDriverProvider.DEFAULT_HOST));
    }

    @Test
    void anEngineWithoutAPodmanComponentIsNotPodman() {
        var provider = new PodmanDriverProvider(Map.of());

        assertThat(provider.mismatchedEngine(List.of("Engine", "containerd", "runc", "docker-init")))
                .hasValueSatisfying(reason -> assertThat(reason).contains("docker driver"));
        assertThat(provider.mismatchedEngine(List.of("Podman Engine"))).isEmpty();
    }

    @Test
    void podmansOwnSettingIsKnownAndAMisspeltOneIsRefusedByAvailabilityNamingIt() {
        var provider = new PodmanDriverProvider(Map.of());

        assertThat(provider.settings(DriverSettings.EMPTY.with("podman.ulimits", "nofile=1024:1024")))
                .isNotNull();
        Availability misspelt = provider.availability(DriverSettings.EMPTY.with("podman.ulimit", "nofile=1024:1024"));
        assertThat(misspelt.available()).isFalse();
        assertThat(misspelt.reason()).startsWith("podman.ulimit: is not a setting of this driver");
    }
}
