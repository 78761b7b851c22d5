package dev.sandgate.benchmarks.engine;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.SandboxServiceGrpc.SandboxServiceBlockingStub;
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
 * The gateway side: a gateway in this JVM, configured as {@code bin/sandgate-gateway --driver <engine>} would be (the
 * SQLite store in {@code dataDir}, the driver's defaults but for its socket), served over Netty on a free loopback
 * port, and called through its gRPC API with a blocking stub over a plaintext loopback channel.
 */
final class GatewaySide implements LifecycleSide {
    private static final long DEADLINE_SECONDS = 120;

    private final Gateway gateway;
    private final GatewayServer server;
    private final ManagedChannel channel;
    private final SandboxServiceBlockingStub sandboxes;
    private final String image;
    private final String workspace;

    private GatewaySide(Gateway gateway, GatewayServer server, String image, String workspace) {
        this.gateway = gateway;
        this.server = server;
        this.image = image;
        this.workspace = workspace;
        this.channel = NettyChannelBuilder.forAddress(
                        new InetSocketAddress(InetAddress.getLoopbackAddress(), server.port()))
                .usePlaintext()
                .build();
        this.sandboxes = SandboxServiceGrpc.newBlockingStub(channel);
    }

    static GatewaySide start(EngineBenchmarkSettings settings, Path dataDir, String workspace) {
        InetAddress loopback = InetAddress.getLoopbackAddress();
        String driver = settings.engine().driver;
        GatewayConfig config = GatewayConfig.load(
                new String[] {
                    "--listen",
                    loopback.getHostAddress() + ":0",
                    "--data-dir",
                    dataDir.toString(),
                    "--driver",
                    driver,
                    "--driver-property",
                    driver + ".host=" + settings.host()
                },
                Map.of());
        Gateway gateway = Gateway.open(config);
        try {
            GatewayServer server =
                    GatewayServer.start(gateway, NettyServerBuilder.forAddress(new InetSocketAddress(loopback, 0)));
            return new GatewaySide(gateway, server, settings.image(), workspace);
        } catch (RuntimeException e) {
            gateway.close();
            throw e;
        }
    }

    @Override
    public String label() {
        return "gateway";
    }

    @Override
    public String create(String name) {
        return stub().createSandbox(CreateSandboxRequest.newBuilder()
                        .setRequestId(UUID.randomUUID().toString())
                        .setWorkspace(workspace)
                        .setName(name)
                        .setSpec(SandboxSpec.newBuilder()
                                .setImage(image)
                                .addArgs("sleep")
                                .addArgs("3600"))
                        .build())
                .getSandbox()
                .getId();
    }

    @Override
    public void stop(String handle) {
        stub().stopSandbox(StopSandboxRequest.newBuilder()
                .setRequestId(UUID.randomUUID().toString())
                .setTarget(target(handle))
                .build());
    }

    @Override
    public void start(String handle) {
        stub().startSandbox(StartSandboxRequest.newBuilder()
                .setRequestId(UUID.randomUUID().toString())
                .setTarget(target(handle))
                .build());
    }

    @Override
    public void delete(String handle) {
        stub().deleteSandbox(DeleteSandboxRequest.newBuilder()
                .setRequestId(UUID.randomUUID().toString())
                .setTarget(target(handle))
                .build());
    }

    private static SandboxTarget target(String id) {
        return SandboxTarget.newBuilder().setId(id).build();
    }

    private SandboxServiceBlockingStub stub() {
        return sandboxes.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        try {
            channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            server.close();
            gateway.close();
        }
    }
}
