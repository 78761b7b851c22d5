package dev.sandgate.driver.vm;

import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.ComputeDriverConformanceTest;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.testing.EngineTest;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.io.TempDir;

/** The conformance kit against real QEMU VMs booting the test image (scripts/images/vm/build.sh). */
@EngineTest
class VmDriverConformanceTest extends ComputeDriverConformanceTest {
    @TempDir
    static Path stateDirectory;

    @Override
    protected ComputeDriverProvider provider() {
        return new VmDriverProvider();
    }

    @Override
    protected DriverSettings config() {
        return VmTestImage.config(stateDirectory);
    }

    @Override
    protected BackendProbe probe() {
        return new VmBackendProbe(VmSettings.from(config()));
    }

    @Override
    protected SandboxSpec runningSpec() {
        return SandboxSpec.ofImage(VmTestImage.IMAGE);
    }

    /** An image the driver is not configured with: no VM can ever boot it. */
    @Override
    protected SandboxSpec permanentlyRefusedSpec() {
        return SandboxSpec.ofImage("sandgate-kit-absent");
    }

    /** A boot takes 5 to 8 s under TCG on an idle machine; far longer while the machine compiles. */
    @Override
    protected Duration readinessTimeout() {
        return Duration.ofMinutes(2);
    }
}
