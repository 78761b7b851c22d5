package dev.sandgate.benchmarks.engine;

import dev.sandgate.benchmarks.LifecycleClient;
import dev.sandgate.gateway.server.Gateway;
import dev.sandgate.gateway.server.GatewayServer;
import dev.sandgate.gateway.server.GatewaySettings;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
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
    private final LifecycleClient lifecycle;
    private final String workspace;

    private GatewaySide(Gateway gateway, GatewayServer server, String image, String workspace) {
        this.gateway = gateway;
        this.server = server;
        this.workspace = workspace;
        this.channel = NettyChannelBuilder.forAddress(
                        new InetSocketAddress(InetAddress.getLoopbackAddress(), server.port()))
                .usePlaintext()
                .build();
        this.lifecycle = new LifecycleClient(channel, Duration.ofSeconds(DEADLINE_SECONDS), image);
    }

    static GatewaySide start(EngineBenchmarkSettings settings, Path dataDir, String workspace) {
        InetAddress loopback = InetAddress.getLoopbackAddress();
        String driver = settings.engine().driver;
        GatewaySettings config = GatewaySettings.load(
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

    /**
     * Makes one bare gRPC call to this gateway's server over the same channel, the health check (no lifecycle code, no
     * store, no driver), and returns how long it took in nanoseconds: what the transport alone costs at the moment.
     */
    long bareCall() {
        long started = System.nanoTime();
        // The standard health check every gateway serves; an empty request asks for the server's overall status.
        HealthGrpc.newBlockingStub(channel)
                .withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS)
                .check(HealthCheckRequest.getDefaultInstance());
        return System.nanoTime() - started;
    }

    @Override
    public String label() {
        return "gateway";
    }

    @Override
    public String create(String name) {
        return lifecycle.create(workspace, name);
    }

    @Override
    public void stop(String handle) {
        lifecycle.stop(handle);
    }

    @Override
    public void start(String handle) {
        lifecycle.start(handle);
    }

    @Override
    public void delete(String handle) {
        lifecycle.delete(handle);
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
