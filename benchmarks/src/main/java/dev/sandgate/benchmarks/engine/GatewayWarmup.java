package dev.sandgate.benchmarks.engine;

import dev.sandgate.benchmarks.BenchGateway;
import dev.sandgate.benchmarks.LifecycleClient;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;

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
        try (BenchGateway gateway = BenchGateway.start(
                work.resolve("warmup-data"), work.resolve("warmup-reference"), Duration.ofSeconds(1), "NORMAL")) {
            ManagedChannel channel = NettyChannelBuilder.forAddress(
                            new InetSocketAddress(InetAddress.getLoopbackAddress(), gateway.port()))
                    .usePlaintext()
                    .build();
            try {
                var client = new LifecycleClient(channel, Duration.ofSeconds(60), "busybox");
                for (int i = 0; i < lifecycles; i++) {
                    String id = client.create("warmup", "w" + i);
                    client.stop(id);
                    client.start(id);
                    client.delete(id);
                }
            } finally {
                channel.shutdownNow();
            }
        }
    }
}
