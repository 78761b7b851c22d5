package dev.sandgate.gateway.lifecycle;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.driver.host.HostedDriverProcess;
import dev.sandgate.driver.host.StallingStopReferenceProvider;
import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.gateway.server.Gateway;
import dev.sandgate.gateway.server.GatewayServer;
import dev.sandgate.gateway.server.GatewaySettings;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.testing.StoreSchema;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gateway on the remote driver, whose driver process is killed in the middle of a stop: the driver call is
 * UNAVAILABLE, the stop stays pending, and the gateway completes it by itself once a driver process serves again.
 */
class RemoteDriverRestartTest {
    @TempDir
    Path root;

    private HostedDriverProcess host;
    private Gateway gateway;
    private GatewayServer server;
    private ManagedChannel channel;
    private StoreSchema schema;

    @BeforeEach
    void storeOfThisRun() throws Exception {
        schema = StoreSchema.forThisRun();
    }

    @AfterEach
    void close() {
        if (channel != null) {
            channel.shutdownNow();
        }
        if (server != null) {
            server.close();
        }
        if (gateway != null) {
            gateway.close();
        }
        if (host != null) {
            host.close();
        }
        StoreSchema.closeIfAny(schema);
    }

    private HostedDriverProcess host(List<String> driver, Map<String, String> extra) {
        var settings = new java.util.HashMap<>(extra);
        settings.put(ReferenceDriverProvider.DIRECTORY, root.resolve("backend").toString());
        return HostedDriverProcess.of(driver, settings, root.resolve("driver.sock"), root.resolve("host.log"))
                .start();
    }

    private SandboxServiceGrpc.SandboxServiceBlockingStub stub() {
        return SandboxServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private Phase phase(String id) {
        return stub().getSandbox(
                        GetSandboxRequest.newBuilder().setTarget(byId(id)).build())
                .getSandbox()
                .getPhase();
    }

    private static void await(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline).as("waiting for %s", what).isNegative();
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    @Test
    void aStopWhoseDriverProcessDiesStaysPendingAndCompletesOnceTheDriverIsBack() throws Exception {
        Path stopEntered = root.resolve("stop-entered");
        host = host(
                List.of("--provider-class", StallingStopReferenceProvider.class.getName()),
                Map.of(StallingStopReferenceProvider.STOP_ENTERED, stopEntered.toString()));
        gateway = Gateway.open(GatewaySettings.load(
                StoreSchema.withStore(
                        schema,
                        "--data-dir",
                        root.resolve("data").toString(),
                        "--listen",
                        "127.0.0.1:0",
                        "--driver",
                        "remote",
                        "--driver-property",
                        "remote.target=unix://" + root.resolve("driver.sock")),
                Map.of()));
        String name = "sandgate-remote-test-" + UUID.randomUUID();
        server = GatewayServer.start(gateway, InProcessServerBuilder.forName(name));
        channel = InProcessChannelBuilder.forName(name).build();
        Sandbox sandbox = stub().createSandbox(
                        TestGateway.createRequest("team", "agent").build())
                .getSandbox();
        await(() -> phase(sandbox.getId()) == Phase.READY, "the sandbox to run");

        StopSandboxRequest stop = StopSandboxRequest.newBuilder()
                .setRequestId(TestGateway.newRequestId())
                .setTarget(byId(sandbox.getId()))
                .build();
        CompletableFuture<GrpcErrors.Failure> stopping =
                CompletableFuture.supplyAsync(() -> failure(() -> stub().stopSandbox(stop)));
        await(() -> Files.exists(stopEntered), "the driver process to be inside its stop");
        host.kill();

        GrpcErrors.Failure pending = stopping.get(60, TimeUnit.SECONDS);
        assertThat(pending.code()).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(phase(sandbox.getId())).isNotEqualTo(Phase.STOPPED);

        host = host(List.of("--driver", ReferenceDriverProvider.NAME), Map.of());
        await(() -> phase(sandbox.getId()) == Phase.STOPPED, "the pending stop to complete on the new driver process");
        assertThat(stub().stopSandbox(stop).getSandbox().getPhase()).isEqualTo(Phase.STOPPED);
    }
}
