package dev.sandgate.driver.host;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.driver.remote.RemoteDriverProvider;
import dev.sandgate.driver.remote.RemoteSettings;
import dev.sandgate.driver.v1.ComputeDriverGrpc;
import dev.sandgate.driver.v1.HandshakeRequest;
import dev.sandgate.driver.v1.ProtocolVersion;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import io.grpc.ChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A driver host on TCP serves only clients with a certificate of the CA it trusts: a client without a certificate,
 * with one of another CA, or without TLS is refused at the TLS handshake, before any call reaches the driver.
 */
class DriverHostMutualTlsTest {
    @TempDir
    static Path directory;

    private static TestCertificateAuthority gateways;
    private static TestCertificateAuthority hosts;
    private static DriverHost host;

    @BeforeAll
    static void serveOverMutualTls() throws IOException {
        gateways = TestCertificateAuthority.create(directory, "gateways");
        hosts = TestCertificateAuthority.create(directory, "driver-hosts");
        TestCertificateAuthority.Issued server = hosts.server("driver-host");
        host = DriverHost.start(
                new ReferenceDriverProvider(),
                DriverSettings.EMPTY.with(
                        ReferenceDriverProvider.DIRECTORY,
                        directory.resolve("backend").toString()),
                new DriverHost.Listen.Tcp("127.0.0.1", 0, server.certificate(), server.key(), gateways.certificate()));
    }

    @AfterAll
    static void stop() {
        host.close();
    }

    private static DriverSettings remoteConfig(TestCertificateAuthority.Issued client, Path trust) {
        return DriverSettings.EMPTY
                .with(RemoteSettings.TARGET, "127.0.0.1:" + host.port())
                .with(RemoteSettings.TLS_CERTIFICATE, client.certificate().toString())
                .with(RemoteSettings.TLS_KEY, client.key().toString())
                .with(RemoteSettings.TLS_TRUST, trust.toString())
                .with(RemoteSettings.CONNECT_TIMEOUT, "3s");
    }

    private static StatusRuntimeException handshakeOver(ChannelCredentials credentials) {
        ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", host.port(), credentials)
                .build();
        try {
            return catchThrowableOfType(
                    StatusRuntimeException.class,
                    () -> ComputeDriverGrpc.newBlockingStub(channel)
                            .withDeadlineAfter(30, TimeUnit.SECONDS)
                            .handshake(HandshakeRequest.newBuilder()
                                    .setProtocolVersion(ProtocolVersion.PROTOCOL_VERSION_1)
                                    .setGatewayId("intruder")
                                    .build()));
        } finally {
            channel.shutdownNow();
        }
    }

    @Test
    void aClientWithACertificateOfTheTrustedAuthorityIsServed() {
        DriverSettings config = remoteConfig(gateways.client("gateway"), hosts.certificate());

        try (ComputeDriver driver = new RemoteDriverProvider().create(config, DriverContext.of("gateway-1"))) {
            assertThat(driver.list()).isEmpty();
        }
    }

    @Test
    void aClientWithoutACertificateIsRefusedAtTheHandshake() throws IOException {
        StatusRuntimeException refused = handshakeOver(TlsChannelCredentials.newBuilder()
                .trustManager(hosts.certificate().toFile())
                .build());

        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(refused).hasStackTraceContaining("CERTIFICATE_REQUIRED");
    }

    @Test
    void aClientCertificateOfAnotherAuthorityIsRefusedAtTheHandshake() {
        var strangers = TestCertificateAuthority.create(directory, "strangers");
        DriverSettings config = remoteConfig(strangers.client("stranger"), hosts.certificate());

        DriverException refused = catchThrowableOfType(
                DriverException.class, () -> new RemoteDriverProvider().create(config, DriverContext.of("gateway-1")));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.UNAVAILABLE);
        assertThat(refused.getMessage())
                .startsWith("remote driver at 127.0.0.1:" + host.port() + ": the TLS handshake failed")
                .contains("refused this gateway's client certificate (remote.tls.certificate)");
        assertThat(new RemoteDriverProvider().availability(config).reason())
                .contains("refused this gateway's client certificate");
    }

    @Test
    void aPlaintextClientIsRefused() {
        StatusRuntimeException refused = handshakeOver(InsecureChannelCredentials.create());

        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    }

    @Test
    void aHostCertificateOfAnotherAuthorityIsRefusedByTheClient() {
        var strangers = TestCertificateAuthority.create(directory, "strangers-of-the-host");
        DriverSettings config = remoteConfig(gateways.client("another-gateway"), strangers.certificate());

        DriverException refused = catchThrowableOfType(
                DriverException.class, () -> new RemoteDriverProvider().create(config, DriverContext.of("gateway-1")));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.UNAVAILABLE);
        assertThat(refused.getMessage())
                .contains("the TLS handshake failed", "the driver's certificate does not chain to remote.tls.trust");
    }

    @Test
    void aHostWhoseTlsFilesAreNotPemRefusesToStart() throws IOException {
        Path notPem = Files.writeString(directory.resolve("not.pem"), "not a certificate");

        DriverException refused = catchThrowableOfType(
                DriverException.class,
                () -> DriverHost.start(
                        new ReferenceDriverProvider(),
                        DriverSettings.EMPTY,
                        new DriverHost.Listen.Tcp("127.0.0.1", 0, notPem, notPem, gateways.certificate())));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(refused.getMessage()).startsWith("--tls-certificate ").contains("cannot set up mutual TLS");
    }
}
