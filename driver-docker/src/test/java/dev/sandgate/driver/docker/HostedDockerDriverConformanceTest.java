package dev.sandgate.driver.docker;

import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.ComputeDriverConformanceTest;
import dev.sandgate.driver.container.testing.DockerJavaBackendProbe;
import dev.sandgate.driver.host.HostedDriverExtension;
import dev.sandgate.driver.host.HostedDriverProcess;
import dev.sandgate.driver.remote.RemoteDriverProvider;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.testing.EngineTest;
import dev.sandgate.testing.ProcessTest;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kit over the wire: the Docker driver in a driver host process of its own, called through the remote driver; the
 * probe talks to the engine directly.
 */
@ProcessTest
@EngineTest
class HostedDockerDriverConformanceTest extends ComputeDriverConformanceTest {
    @TempDir
    static Path directory;

    @RegisterExtension
    static final HostedDriverExtension HOST = new HostedDriverExtension(() -> HostedDriverProcess.of(
            List.of("--driver", DockerDriverProvider.NAME),
            DockerTestEngine.ENGINE.driverConfig(DockerDriverProvider.NAME).properties(),
            directory.resolve("driver.sock"),
            directory.resolve("host.log")));

    @Override
    protected ComputeDriverProvider provider() {
        return new RemoteDriverProvider();
    }

    @Override
    protected DriverSettings config() {
        return HOST.process().remoteConfig();
    }

    @Override
    protected BackendProbe probe() {
        DockerTestEngine.ENGINE.requireAvailable();
        return new DockerJavaBackendProbe(DockerTestEngine.ENGINE);
    }

    @Override
    protected SandboxSpec runningSpec() {
        return DockerTestEngine.ENGINE.runningSpec();
    }

    @Override
    protected SandboxSpec permanentlyRefusedSpec() {
        return DockerTestEngine.ENGINE.unpullableSpec();
    }
}
