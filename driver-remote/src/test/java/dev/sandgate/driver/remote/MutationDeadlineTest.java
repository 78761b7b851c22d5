package dev.sandgate.driver.remote;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sandgate.driver.v1.Capabilities;
import dev.sandgate.driver.v1.ComputeDriverGrpc;
import dev.sandgate.driver.v1.HandshakeRequest;
import dev.sandgate.driver.v1.HandshakeResponse;
import dev.sandgate.driver.v1.MutationAnnouncement;
import dev.sandgate.driver.v1.MutationOperation;
import dev.sandgate.driver.v1.StopCall;
import dev.sandgate.driver.v1.StopReply;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxRef;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A mutating call to a driver that never answers ends at the call timeout with DEADLINE_EXCEEDED naming the operation
 * and the timeout, and is cancelled: the caller never waits forever for a reply.
 */
class MutationDeadlineTest {
    private static final SandboxRef REF = new SandboxRef("0b6f7c1e-3a52-4c8e-9d0a-1f2e3d4c5b6a", "team", "box");

    @TempDir
    Path directory;

    private final CountDownLatch cancelled = new CountDownLatch(1);
    private FakeDriverServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    /** A driver whose stop optionally announces a mutation, then never answers. */
    private DriverSettings serveSilentStop(boolean announce) throws IOException {
        server = FakeDriverServer.serve(
                directory.resolve("driver.sock"), "rw-------", new ComputeDriverGrpc.ComputeDriverImplBase() {
                    @Override
                    public void handshake(HandshakeRequest request, StreamObserver<HandshakeResponse> responses) {
                        responses.onNext(HandshakeResponse.newBuilder()
                                .setProtocolVersion(RemoteDriverProvider.PROTOCOL_VERSION)
                                .setDriverName("silent")
                                .setCapabilities(Capabilities.newBuilder().setPersistentWorkspace(true))
                                .addAllFeatures(RemoteDriverProvider.REQUIRED_FEATURES)
                                .setAvailable(true)
                                .build());
                        responses.onCompleted();
                    }

                    @Override
                    public StreamObserver<StopCall> stop(StreamObserver<StopReply> replies) {
                        return new StreamObserver<>() {
                            @Override
                            public void onNext(StopCall call) {
                                if (announce && call.hasRequest()) {
                                    replies.onNext(StopReply.newBuilder()
                                            .setAnnouncement(MutationAnnouncement.newBuilder()
                                                    .setSequence(1)
                                                    .setRef(call.getRequest().getRef())
                                                    .setOperation(MutationOperation.MUTATION_OPERATION_STOP)
                                                    .setBackendId("b1"))
                                            .build());
                                }
                            }

                            @Override
                            public void onError(Throwable t) {
                                cancelled.countDown();
                            }

                            @Override
                            public void onCompleted() {}
                        };
                    }
                });
        return server.config().with(RemoteSettings.CALL_TIMEOUT, "300ms");
    }

    private void assertEndsAtTheCallTimeout(ComputeDriver driver) throws InterruptedException {
        long started = System.nanoTime();
        DriverException error =
                catchThrowableOfType(DriverException.class, () -> driver.stop(REF, OptionalLong.empty()));
        Duration took = Duration.ofNanos(System.nanoTime() - started);

        assertThat(error.code()).isEqualTo(DriverErrorCode.DEADLINE_EXCEEDED);
        assertThat(error.getMessage())
                .contains("stop got no answer within PT0.3S")
                .contains(RemoteSettings.CALL_TIMEOUT);
        assertThat(took).isBetween(Duration.ofMillis(250), Duration.ofSeconds(5));
        assertThat(cancelled.await(5, TimeUnit.SECONDS))
                .as("the call is cancelled")
                .isTrue();
    }

    @Test
    void aMutationWithoutAnyAnswerEndsAtTheCallTimeoutNamingTheOperation() throws Exception {
        try (var driver = new RemoteDriverProvider().create(serveSilentStop(false), DriverContext.of("gw"))) {
            assertEndsAtTheCallTimeout(driver);
        }
    }

    @Test
    void aMutationSilentAfterItsAcknowledgedAnnouncementEndsAtTheCallTimeout() throws Exception {
        var hooks = new AtomicInteger();
        MutationHook hook = (ref, operation, backendId) -> hooks.incrementAndGet();
        try (var driver = new RemoteDriverProvider()
                .create(serveSilentStop(true), new DriverContext("gw", java.time.Clock.systemUTC(), hook))) {
            assertEndsAtTheCallTimeout(driver);
        }
        assertThat(hooks).hasValue(1);
    }
}
