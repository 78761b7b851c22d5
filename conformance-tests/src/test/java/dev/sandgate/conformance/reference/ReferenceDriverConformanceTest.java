package dev.sandgate.conformance.reference;

import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.ComputeDriverConformanceTest;
import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxSpec;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.io.TempDir;

/** The whole kit against the reference driver with its default settings. */
class ReferenceDriverConformanceTest extends ComputeDriverConformanceTest {
    @TempDir
    static Path directory;

    @Override
    protected ComputeDriverProvider provider() {
        return new ReferenceDriverProvider();
    }

    @Override
    protected DriverSettings config() {
        return DriverSettings.EMPTY.with(ReferenceDriverProvider.DIRECTORY, directory.toString());
    }

    @Override
    protected BackendProbe probe() {
        return new ReferenceBackendProbe(directory);
    }

    @Override
    protected SandboxSpec runningSpec() {
        return SandboxSpec.ofImage("reference/sleeper");
    }

    @Override
    protected SandboxSpec permanentlyRefusedSpec() {
        return SandboxSpec.ofImage("missing/sleeper");
    }

    @Override
    protected Duration readinessTimeout() {
        return Duration.ofSeconds(10);
    }
}
