package dev.sandgate.driver.host;

import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.ComputeDriverConformanceTest;
import dev.sandgate.conformance.reference.ReferenceBackendProbe;
import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.driver.remote.RemoteDriverProvider;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.testing.ProcessTest;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The whole kit over the wire: the reference driver in a driver host process, called through the remote driver. */
@ProcessTest
class HostedReferenceDriverConformanceTest extends ComputeDriverConformanceTest {
    @TempDir
    static Path directory;

    @RegisterExtension
    static final HostedDriverExtension HOST = new HostedDriverExtension(() -> HostedDriverProcess.of(
            List.of("--driver", ReferenceDriverProvider.NAME),
            Map.of(
                    ReferenceDriverProvider.DIRECTORY,
                    directory.resolve("backend").toString()),
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
        return new ReferenceBackendProbe(directory.resolve("backend"));
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
