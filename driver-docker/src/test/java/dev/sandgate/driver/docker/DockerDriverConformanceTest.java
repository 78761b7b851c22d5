package dev.sandgate.driver.docker;

import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.ComputeDriverConformanceTest;
import dev.sandgate.driver.container.testing.DockerJavaBackendProbe;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.testing.EngineTest;

/** The conformance kit against a real Docker Engine (set up by scripts/test; see {@link DockerTestEngine}). */
@EngineTest
class DockerDriverConformanceTest extends ComputeDriverConformanceTest {
    @Override
    protected ComputeDriverProvider provider() {
        return new DockerDriverProvider();
    }

    @Override
    protected DriverSettings config() {
        return DockerTestEngine.ENGINE.driverConfig(DockerDriverProvider.NAME);
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
