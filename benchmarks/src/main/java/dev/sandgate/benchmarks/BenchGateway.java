package dev.sandgate.benchmarks;

import dev.sandgate.gateway.server.Gateway;
import dev.sandgate.gateway.server.GatewayServer;
import dev.sandgate.gateway.server.GatewaySettings;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/**
 * A gateway in this JVM on the reference driver: configured as {@code bin/sandgate-gateway} would be with the same
 * flags (the reference driver on a directory, the store in a data directory), served over Netty on a free loopback
 * port, with extra services registered on the same server.
 */
public final class BenchGateway implements AutoCloseable {
    private final Gateway gateway;
    private final GatewayServer server;

    private BenchGateway(Gateway gateway, GatewayServer server) {
        this.gateway = gateway;
        this.server = server;
    }

    /** The gateway under test of the load benchmark: the store under {@code work}, the driver on {@code driverDirectory}. */
    static BenchGateway start(
            Path work, Path driverDirectory, BenchmarkSettings settings, ServerServiceDefinition extra) {
        return start(
                work.resolve("gateway-data"),
                driverDirectory,
                settings.referenceWatchInterval(),
                settings.synchronous(),
                extra);
    }

    /**
     * Starts a gateway for a benchmark run.
     *
     * @param synchronous the store's SQLite synchronous mode, NORMAL or FULL
     */
    public static BenchGateway start(
            Path dataDirectory,
            Path driverDirectory,
            Duration watchInterval,
            String synchronous,
            ServerServiceDefinition... extra) {
        InetAddress loopback = InetAddress.getLoopbackAddress();
        GatewaySettings config = GatewaySettings.load(
                new String[] {
                    "--listen",
                    loopback.getHostAddress() + ":0",
                    "--data-dir",
                    dataDirectory.toString(),
                    "--driver",
                    "reference",
                    "--driver-property",
                    "reference.directory=" + driverDirectory,
                    "--driver-property",
                    "reference.watch-interval=" + watchInterval.toMillis() + "ms",
                    "--store-synchronous",
                    synchronous
                },
                Map.of());
        Gateway gateway = Gateway.open(config);
        try {
            NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(loopback, 0));
            for (ServerServiceDefinition service : extra) {
                builder.addService(service);
            }
            return new BenchGateway(gateway, GatewayServer.start(gateway, builder));
        } catch (RuntimeException e) {
            gateway.close();
            throw e;
        }
    }

    public int port() {
        return server.port();
    }

    @Override
    public void close() {
        server.close();
        gateway.close();
    }
}
