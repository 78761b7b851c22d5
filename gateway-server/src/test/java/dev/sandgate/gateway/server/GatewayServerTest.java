package dev.sandgate.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import dev.sandgate.gateway.grpc.WatchStreamLimits;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.StartedGateway;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.gateway.testing.WatchClient;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.reflection.v1.ServerReflectionGrpc;
import io.grpc.reflection.v1.ServerReflectionRequest;
import io.grpc.reflection.v1.ServerReflectionResponse;
import io.grpc.reflection.v1.ServiceResponse;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The served extras: health checking, reflection, and waiting for readiness. Over real Netty on loopback. */
class GatewayServerTest {
    @StartedGateway(transport = TestGateway.Transport.NETTY)
    TestGateway gateway;

    @Test
    @DisplayName("gRPC health checking reports the gateway and its service SERVING")
    void health() {
        var health = HealthGrpc.newBlockingStub(gateway.channel()).withDeadlineAfter(30, TimeUnit.SECONDS);

        assertThat(health.check(HealthCheckRequest.getDefaultInstance()).getStatus())
                .isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
        assertThat(health.check(HealthCheckRequest.newBuilder()
                                .setService(SandboxServiceGrpc.SERVICE_NAME)
                                .build())
                        .getStatus())
                .isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
    }

    @Test
    @DisplayName("server reflection lists the sandbox service")
    void reflection() throws Exception {
        CompletableFuture<ServerReflectionResponse> answer = new CompletableFuture<>();
        var requests = ServerReflectionGrpc.newStub(gateway.channel()).serverReflectionInfo(new StreamObserver<>() {
            @Override
            public void onNext(ServerReflectionResponse value) {
                answer.complete(value);
            }

            @Override
            public void onError(Throwable t) {
                answer.completeExceptionally(t);
            }

            @Override
            public void onCompleted() {}
        });
        requests.onNext(
                ServerReflectionRequest.newBuilder().setListServices("*").build());

        ServerReflectionResponse response = answer.get(30, TimeUnit.SECONDS);
        requests.onCompleted();

        assertThat(response.getListServicesResponse().getServiceList())
                .extracting(ServiceResponse::getName)
                .contains(SandboxServiceGrpc.SERVICE_NAME, "grpc.health.v1.Health");
    }

    @Test
    @DisplayName("create with wait_until_ready returns once the driver reports the execution running")
    void waitUntilReady() throws Exception {
        gateway.driver().launchState(SandboxState.PROVISIONING);
        CompletableFuture<CreateSandboxResponse> create = CompletableFuture.supplyAsync(() -> gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "agent")
                        .setWaitUntilReady(true)
                        .build()));
        while (!create.isDone()) {
            for (SandboxObservation o : gateway.driver().list()) {
                gateway.driver()
                        .emit(new SandboxEvent.Snapshot(new SandboxObservation(
                                o.ref(), o.generation(), SandboxState.RUNNING, o.policyDigest(), Map.of(), "")));
            }
            Thread.sleep(20);
        }

        assertThat(create.get(30, TimeUnit.SECONDS).getSandbox().getPhase()).isEqualTo(Phase.READY);
    }

    @Test
    @DisplayName("a watcher that stops reading gets RESOURCE_EXHAUSTED / WATCH_OVERFLOW instead of unbounded buffering")
    void slowWatcherOverflows() throws Exception {
        var sandbox = gateway.create("team", "agent");
        CompletableFuture<Throwable> ended = new CompletableFuture<>();
        CompletableFuture<ClientCallStreamObserver<WatchSandboxesRequest>> call = new CompletableFuture<>();
        CountDownLatch firstMessage = new CountDownLatch(1);
        gateway.asyncStub()
                .watchSandboxes(
                        WatchSandboxesRequest.getDefaultInstance(),
                        new ClientResponseObserver<WatchSandboxesRequest, WatchSandboxesResponse>() {
                            @Override
                            public void beforeStart(ClientCallStreamObserver<WatchSandboxesRequest> requestStream) {
                                requestStream.disableAutoRequestWithInitial(1);
                                call.complete(requestStream);
                            }

                            @Override
                            public void onNext(WatchSandboxesResponse value) {
                                firstMessage.countDown();
                            }

                            @Override
                            public void onError(Throwable t) {
                                ended.complete(t);
                            }

                            @Override
                            public void onCompleted() {
                                ended.complete(null);
                            }
                        });
        SandboxRef ref = new SandboxRef(sandbox.getId(), sandbox.getWorkspace(), sandbox.getName());
        // The server subscribes to driver events before it sends the first snapshot: once that arrived, every
        // event emitted below reaches this watch's buffer.
        assertThat(firstMessage.await(30, TimeUnit.SECONDS)).isTrue();

        for (int i = 0; i < WatchStreamLimits.CAPACITY + 2_000; i++) {
            gateway.driver().emit(new SandboxEvent.Platform(ref, 1, "test", "event " + i));
        }
        call.get(30, TimeUnit.SECONDS).request(Integer.MAX_VALUE);

        GrpcErrors.Failure failure = GrpcErrors.read((StatusRuntimeException) ended.get(60, TimeUnit.SECONDS));
        assertThat(failure.code()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(failure.reason()).isEqualTo("WATCH_OVERFLOW");
    }

    @Test
    @DisplayName(
            "closing the server ends an open watch with UNAVAILABLE / GATEWAY_SHUTTING_DOWN, so the watcher retries")
    void closingEndsWatches() throws Exception {
        gateway.create("team", "agent");
        try (WatchClient watch = new WatchClient(gateway.asyncStub(), WatchSandboxesRequest.getDefaultInstance())) {
            assertThat(watch.snapshot()).hasSize(1);

            gateway.server().close();

            // A watch left open would be cancelled when the drain runs out: CANCELLED, without a reason.
            Object end = watch.end();
            assertThat(end).isInstanceOf(StatusRuntimeException.class);
            GrpcErrors.Failure failure = GrpcErrors.read((StatusRuntimeException) end);
            assertThat(failure.code()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(failure.reason()).isEqualTo("GATEWAY_SHUTTING_DOWN");
        }
    }

    @Test
    @DisplayName("without wait_until_ready, create returns as soon as the launch is handed to the driver")
    void noWait() {
        gateway.driver().launchState(SandboxState.PROVISIONING);

        assertThat(gateway.create("team", "agent").getPhase()).isEqualTo(Phase.PROVISIONING);
    }
}
