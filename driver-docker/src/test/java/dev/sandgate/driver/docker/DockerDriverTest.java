package dev.sandgate.driver.docker;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.driver.container.ContainerEngineProvider;
import dev.sandgate.driver.container.testing.ContainerEngineDriverTest;
import dev.sandgate.driver.container.testing.TestEngine;
import dev.sandgate.spi.Availability;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.testing.EngineTest;
import org.junit.jupiter.api.Test;

/** The container driver's engine tests against a real Docker Engine. */
@EngineTest
class DockerDriverTest extends ContainerEngineDriverTest {
    @Override
    protected TestEngine engine() {
        return DockerTestEngine.ENGINE;
    }

    @Override
    protected ContainerEngineProvider provider() {
        return new DockerDriverProvider();
    }

    @Override
    protected String inspectedDefaultNetworkMode() {
        return "default";
    }

    @Test
    void aPodmanSocketIsNotTakenForTheDockerEngine() {
        TestEngine podman =
                TestEngine.fromEnvironment("Podman", "SANDGATE_PODMAN_HOST", "unix:///run/podman/podman.sock");
        podman.requireAvailable();

        Availability availability = provider().availability(DriverSettings.EMPTY.with("docker.host", podman.host()));

        assertThat(availability.available()).isFalse();
        assertThat(availability.reason()).contains(podman.host()).contains("use the podman driver");
    }
}
