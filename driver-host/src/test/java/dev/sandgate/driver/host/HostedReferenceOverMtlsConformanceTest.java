package dev.sandgate.driver.host;

import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.ComputeDriverConformanceTest;
import dev.sandgate.conformance.reference.ReferenceBackendProbe;
import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.driver.remote.RemoteDriverProvider;
import dev.sandgate.driver.remote.RemoteSettings;
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

/**
 * The whole kit over TCP with mutual TLS: the reference driver in a driver host process on {@code 127.0.0.1}, with a
 * class path of its own (driver-host's jars and a directory with the reference driver's jars, nothing of this test's
 * class path), called through the remote driver with a client certificate of the CA the host trusts.
 */
@ProcessTest
class HostedReferenceOverMtlsConformanceTest extends ComputeDriverConformanceTest {
    @TempDir
    static Path directory;

    private static TestCertificateAuthority.Issued client;
    private static TestCertificateAuthority hostAuthority;

    @RegisterExtension
    static final HostedDriverExtension HOST = new HostedDriverExtension(() -> {
        // One CA signs the gateway's client certificates, another the host's: each side trusts only the other's.
        var gatewayAuthority = TestCertificateAuthority.create(directory, "gateways");
        hostAuthority = TestCertificateAuthority.create(directory, "driver-hosts");
        client = gatewayAuthority.client("gateway");
        TestCertificateAuthority.Issued server = hostAuthority.server("driver-host");
        return HostedDriverProcess.overMutualTls(
                OwnClassPath.hostWithDriver(
                        directory,
                        ReferenceDriverProvider.NAME,
                        ReferenceDriverProvider.class,
                        dev.sandgate.driver.toolkit.SlotLocks.class),
                List.of(), // the only driver on the host's class path
                Map.of(
                        ReferenceDriverProvider.DIRECTORY,
                        directory.resolve("backend").toString()),
                new DriverHost.Listen.Tcp(
                        "127.0.0.1", 0, server.certificate(), server.key(), gatewayAuthority.certificate()),
                directory.resolve("host.log"));
    });

    @Override
    protected ComputeDriverProvider provider() {
        return new RemoteDriverProvider();
    }

    @Override
    protected DriverSettings config() {
        DriverSettings target = HOST.process().remoteConfig();
        return target.with(RemoteSettings.TLS_CERTIFICATE, client.certificate().toString())
                .with(RemoteSettings.TLS_KEY, client.key().toString())
                .with(RemoteSettings.TLS_TRUST, hostAuthority.certificate().toString())
                .with(RemoteSettings.DRIVER, ReferenceDriverProvider.NAME);
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
