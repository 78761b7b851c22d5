package dev.sandgate.driver.remote;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.sandgate.driver.v1.Capabilities;
import dev.sandgate.driver.v1.ComputeDriverGrpc;
import dev.sandgate.driver.v1.HandshakeRequest;
import dev.sandgate.driver.v1.HandshakeResponse;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.SandboxRef;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the remote provider refuses at connect, against a fake driver that answers the handshake as told. */
class HandshakeTest {
    @TempDir
    Path directory;

    private final AtomicReference<HandshakeResponse> answer = new AtomicReference<>();
    private FakeDriverServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    private DriverSettings serve(String permissions) throws IOException {
        server = FakeDriverServer.serve(
                directory.resolve("driver.sock"), permissions, new ComputeDriverGrpc.ComputeDriverImplBase() {
                    @Override
                    public void handshake(HandshakeRequest request, StreamObserver<HandshakeResponse> responses) {
                        responses.onNext(answer.get());
                        responses.onCompleted();
                    }
                });
        return server.config();
    }

    private static HandshakeResponse.Builder fine() {
        return HandshakeResponse.newBuilder()
                .setProtocolVersion(RemoteDriverProvider.PROTOCOL_VERSION)
                .setDriverName("fake")
                .setCapabilities(Capabilities.newBuilder().setPersistentWorkspace(true))
                .addAllFeatures(RemoteDriverProvider.REQUIRED_FEATURES)
                .setAvailable(true);
    }

    private DriverException refusal(DriverSettings config) {
        return catchThrowableOfType(
                DriverException.class, () -> new RemoteDriverProvider().create(config, DriverContext.of("gw")));
    }

    @Test
    void aDriverOfAnotherProtocolVersionIsRefusedNamingBothVersions() throws IOException {
        answer.set(fine().setProtocolVersionValue(2).build());

        DriverException refused = refusal(serve("rw-------"));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(refused.getMessage())
                .startsWith(RemoteSettings.TARGET + ":")
                .contains("protocol version 2, this gateway speaks 1");
    }

    @Test
    void aDriverWithoutMutationAnnouncementsIsRefused() throws IOException {
        answer.set(fine().clearFeatures()
                .addFeatures(RemoteDriverProvider.FEATURE_WATCH)
                .build());

        assertThat(refusal(serve("rw-------")).getMessage())
                .contains("lacks the features [" + RemoteDriverProvider.FEATURE_MUTATION_ANNOUNCEMENTS + "]");
    }

    @Test
    void anotherDriverThanTheOneAskedForIsRefused() throws IOException {
        answer.set(fine().build());

        DriverException refused = refusal(serve("rw-------").with(RemoteSettings.DRIVER, "docker"));

        assertThat(refused.getMessage()).startsWith(RemoteSettings.DRIVER + ":").contains("is 'fake', not 'docker'");
    }

    @Test
    void anUnavailableDriverIsUnavailableWithItsReason() throws IOException {
        answer.set(fine().setAvailable(false)
                .setAvailabilityReason("no engine answers")
                .build());
        DriverSettings config = serve("rw-------");

        assertThat(refusal(config).code()).isEqualTo(DriverErrorCode.UNAVAILABLE);
        assertThat(new RemoteDriverProvider().availability(config).reason()).contains("no engine answers");
    }

    @Test
    void aSocketOthersMayUseIsRefused() throws IOException {
        answer.set(fine().build());

        DriverException refused = refusal(serve("rw-rw-rw-"));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(refused.getMessage()).contains("must be accessible to its owner only");
    }

    @Test
    void aMatchingDriverGivesItsCapabilities() throws IOException {
        answer.set(fine().setCapabilities(Capabilities.newBuilder()
                        .addAllEnforceablePolicyFields(List.of("MEMORY_LIMIT", "A_FIELD_FROM_A_NEWER_SPI"))
                        .setLaunchPolicyOnStart(true))
                .build());

        try (var driver = new RemoteDriverProvider().create(serve("rw-------"), DriverContext.of("gw"))) {
            assertThat(driver.capabilities().enforceablePolicyFields())
                    .containsExactly(dev.sandgate.spi.PolicyField.MEMORY_LIMIT);
            assertThat(driver.capabilities().launchPolicyOnStart()).isTrue();
        }
    }

    @Test
    void aRemoteDriverClaimsNeitherExecNorLogsAndRefusesBothAsUnsupported() throws IOException {
        answer.set(fine().build());

        try (var driver = new RemoteDriverProvider().create(serve("rw-------"), DriverContext.of("gw"))) {
            assertThat(driver.capabilities().exec()).as("exec").isFalse();
            assertThat(driver.capabilities().logs()).as("logs").isFalse();
            var ref = new SandboxRef(Identifiers.newSandboxId(), "ws", "name");
            DriverException exec =
                    assertThrows(DriverException.class, () -> driver.exec(ref, 1, ExecCommand.of("echo"), null));
            assertThat(exec.code()).isEqualTo(DriverErrorCode.UNSUPPORTED);
            DriverException logs = assertThrows(
                    DriverException.class, () -> driver.logs(ref, 1, new LogQuery(false, Optional.empty()), null));
            assertThat(logs.code()).isEqualTo(DriverErrorCode.UNSUPPORTED);
        }
    }
}
