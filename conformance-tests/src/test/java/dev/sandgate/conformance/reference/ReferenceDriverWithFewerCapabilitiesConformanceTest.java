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

/**
 * The whole kit against a reference driver that says "no" wherever it can: it enforces no policy field, cannot
 * change the policy on start, and claims neither exec nor logs. The kit's checks of a "no" (a clean UNSUPPORTED,
 * nothing changed) run here.
 */
class ReferenceDriverWithFewerCapabilitiesConformanceTest extends ComputeDriverConformanceTest {
    @TempDir
    static Path directory;

    @Override
    protected ComputeDriverProvider provider() {
        return new ReferenceDriverProvider();
    }

    @Override
    protected DriverSettings config() {
        return DriverSettings.EMPTY
                .with(ReferenceDriverProvider.DIRECTORY, directory.toString())
                .with(ReferenceDriverProvider.ENFORCEABLE_FIELDS, "none")
                .with(ReferenceDriverProvider.LAUNCH_POLICY_ON_START, "false")
                .with(ReferenceDriverProvider.EXEC, "false")
                .with(ReferenceDriverProvider.LOGS, "false");
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
