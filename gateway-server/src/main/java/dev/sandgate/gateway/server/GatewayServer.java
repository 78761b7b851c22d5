package dev.sandgate.gateway.server;

import static java.util.Objects.requireNonNull;

import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.gateway.grpc.SandboxServiceImpl;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Serves a {@link Gateway} over gRPC: the SandboxService, gRPC health checking and server reflection. It takes a
 * {@link ServerBuilder} so that tests run it in-process and over real Netty alike.
 */
public final class GatewayServer implements AutoCloseable {
    /** How long an operation waits for a busy sandbox when the client set no deadline. */
    public static final Duration DEFAULT_WAIT = Duration.ofSeconds(30);

    private final Server server;
    private final HealthStatusManager health;
    private final ExecutorService watchers;

    private GatewayServer(Server server, HealthStatusManager health, ExecutorService watchers) {
        this.server = server;
        this.health = health;
        this.watchers = watchers;
    }

    public static GatewayServer start(Gateway gateway, ServerBuilder<?> builder) {
        requireNonNull(gateway, "gateway is null");
        AtomicInteger count = new AtomicInteger();
        ExecutorService watchers = Executors.newCachedThreadPool(runnable -> {
            Thread thread = new Thread(runnable, "sandgate-watch-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
        HealthStatusManager health = new HealthStatusManager();
        Server server = builder.addService(new SandboxServiceImpl(gateway.lifecycle(), DEFAULT_WAIT, watchers))
                .addService(health.getHealthService())
                .addService(ProtoReflectionServiceV1.newInstance())
                .build();
        try {
            server.start();
        } catch (IOException e) {
            watchers.shutdownNow();
            throw new UncheckedIOException("cannot start the gRPC server: " + e.getMessage(), e);
        }
        health.setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, ServingStatus.SERVING);
        health.setStatus(SandboxServiceGrpc.SERVICE_NAME, ServingStatus.SERVING);
        return new GatewayServer(server, health, watchers);
    }

    /** The port the server listens on (-1 for in-process servers). */
    public int port() {
        return server.getPort();
    }

    public void awaitTermination() throws InterruptedException {
        server.awaitTermination();
    }

    /** Stops taking calls, lets running calls finish for a few seconds, then cancels the rest (watches). */
    @Override
    public void close() {
        health.enterTerminalState();
        server.shutdown();
        try {
            if (!server.awaitTermination(5, TimeUnit.SECONDS)) {
                server.shutdownNow();
                server.awaitTermination(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            server.shutdownNow();
        }
        watchers.shutdownNow();
    }
}
