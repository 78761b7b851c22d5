package dev.sandgate.driver.podman;

import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.ComputeDriverConformanceTest;
import dev.sandgate.driver.container.testing.DockerJavaBackendProbe;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.testing.EngineTest;

/** The conformance kit against real Podman (set up by scripts/test; see {@link PodmanTestEngine}). */
@EngineTest
class PodmanDriverConformanceTest extends ComputeDriverConformanceTest {
    @Override
    protected ComputeDriverProvider provider() {
        return new PodmanDriverProvider();
    }

    @Override
    protected DriverSettings config() {
        return PodmanTestEngine.ENGINE.driverConfig(PodmanDriverProvider.NAME);
    }

    @Override
    protected BackendProbe probe() {
        PodmanTestEngine.ENGINE.requireAvailable();
        return new DockerJavaBackendProbe(PodmanTestEngine.ENGINE);
    }

    @Override
    protected SandboxSpec runningSpec() {
        return PodmanTestEngine.ENGINE.runningSpec();
    }

    @Override
    protected SandboxSpec permanentlyRefusedSpec() {
        return PodmanTestEngine.ENGINE.unpullableSpec();
    }
}
