package dev.sandgate.benchmarks.engine;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.SandboxSpec;
import dev.sandgate.api.v1.SandboxTarget;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.gateway.server.Gateway;
import dev.sandgate.gateway.server.GatewayConfig;
import dev.sandgate.gateway.server.GatewayServer;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Warms up the gateway's own code before anything is measured: a second gateway in this JVM, on the reference driver,
 * runs {@code lifecycles} create/stop/start/delete rounds through the same gRPC API, store and lifecycle code the
 * measured gateway uses, so that the JIT has compiled them. Only the engine driver's code is then cold, and it warms
 * on the gateway side and the driver-alone side alike. Without this the measured gateway runs its first few hundred
 * calls interpreted, which charges the JIT's start-up to the gateway; a gateway in service is warm.
 */
final class GatewayWarmup {
    private GatewayWarmup() {}

    static void run(int lifecycles, Path work) {
        if (lifecycles <= 0) {
            return;
        }
        InetAddress loopback = InetAddress.getLoopbackAddress();
        GatewayConfig config = GatewayConfig.load(
                new String[] {
                    "--listen",
                    loopback.getHostAddress() + ":0",
                    "--data-dir",
                    work.resolve("warmup-data").toString(),
                    "--driver",
                    "reference",
                    "--driver-property",
                    "reference.directory=" + work.resolve("warmup-reference"),
                    "--driver-property",
                    "reference.watch-interval=1s"
                },
                Map.of());
        try (Gateway gateway = Gateway.open(config);
                GatewayServer server = GatewayServer.start(
                        gateway, NettyServerBuilder.forAddress(new InetSocketAddress(loopback, 0)))) {
            ManagedChannel channel = NettyChannelBuilder.forAddress(new InetSocketAddress(loopback, server.port()))
                    .usePlaintext()
                    .build();
            try {
                var stub = SandboxServiceGrpc.newBlockingStub(channel);
                for (int i = 0; i < lifecycles; i++) {
                    var calls = stub.withDeadlineAfter(60, TimeUnit.SECONDS);
                    String id = calls.createSandbox(CreateSandboxRequest.newBuilder()
                                    .setRequestId(UUID.randomUUID().toString())
                                    .setWorkspace("warmup")
                                    .setName("w" + i)
                                    .setSpec(SandboxSpec.newBuilder()
                                            .setImage("busybox")
                                            .addArgs("sleep")
                                            .addArgs("3600"))
                                    .build())
                            .getSandbox()
                            .getId();
                    SandboxTarget target = SandboxTarget.newBuilder().setId(id).build();
                    calls.stopSandbox(StopSandboxRequest.newBuilder()
                            .setRequestId(UUID.randomUUID().toString())
                            .setTarget(target)
                            .build());
                    calls.startSandbox(StartSandboxRequest.newBuilder()
                            .setRequestId(UUID.randomUUID().toString())
                            .setTarget(target)
                            .build());
                    calls.deleteSandbox(DeleteSandboxRequest.newBuilder()
                            .setRequestId(UUID.randomUUID().toString())
                            .setTarget(target)
                            .build());
                }
            } finally {
                channel.shutdownNow();
            }
        }
    }
}
