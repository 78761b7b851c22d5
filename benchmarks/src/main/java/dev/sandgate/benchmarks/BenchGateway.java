package dev.sandgate.benchmarks;

import dev.sandgate.gateway.server.Gateway;
import dev.sandgate.gateway.server.GatewayConfig;
import dev.sandgate.gateway.server.GatewayServer;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Map;

/**
 * The gateway under test, in this JVM: configured as {@code bin/sandgate-gateway} would be with the same flags (the
 * reference driver on {@code driverDirectory}, the store in a data directory under {@code work}), served over Netty on a
 * free loopback port, with {@code extra} registered on the same server.
 */
final class BenchGateway implements AutoCloseable {
    private final Gateway gateway;
    private final GatewayServer server;

    private BenchGateway(Gateway gateway, GatewayServer server) {
        this.gateway = gateway;
        this.server = server;
    }

    static BenchGateway start(
            Path work, Path driverDirectory, BenchmarkSettings settings, ServerServiceDefinition extra) {
        InetAddress loopback = InetAddress.getLoopbackAddress();
        GatewayConfig config = GatewayConfig.load(
                new String[] {
                    "--listen",
                    loopback.getHostAddress() + ":0",
                    "--data-dir",
                    work.resolve("gateway-data").toString(),
                    "--driver",
                    "reference",
                    "--driver-property",
                    "reference.directory=" + driverDirectory,
                    "--driver-property",
                    "reference.watch-interval="
                            + settings.referenceWatchInterval().toMillis() + "ms",
                    "--store-synchronous",
                    settings.synchronous()
                },
                Map.of());
        Gateway gateway = Gateway.open(config);
        try {
            GatewayServer server = GatewayServer.start(
                    gateway,
                    NettyServerBuilder.forAddress(new InetSocketAddress(loopback, 0))
                            .addService(extra));
            return new BenchGateway(gateway, server);
        } catch (RuntimeException e) {
            gateway.close();
            throw e;
        }
    }

    int port() {
        return server.port();
    }

    @Override
    public void close() {
        server.close();
        gateway.close();
    }
}
