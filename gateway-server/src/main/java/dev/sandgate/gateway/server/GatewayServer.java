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
import java.util.concurrent.ThreadFactory;
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
    private final ExecutorService calls;
    private final ExecutorService watchers;

    private GatewayServer(Server server, HealthStatusManager health, ExecutorService calls, ExecutorService watchers) {
        this.server = server;
        this.health = health;
        this.calls = calls;
        this.watchers = watchers;
    }

    /**
     * Starts a server from {@code builder}, which this sets to {@code directExecutor()}: gRPC's callbacks run on the
     * transport's threads, and every service registered here returns at once. The SandboxService hands each call's work
     * to a thread of its own ({@code sandgate-call-*}) and each watch to another ({@code sandgate-watch-*}); health
     * checks and reflection answer in place. With gRPC's default executor instead, every call passed between threads
     * at each of its callbacks (and once more when it closed).
     */
    public static GatewayServer start(Gateway gateway, ServerBuilder<?> builder) {
        requireNonNull(gateway, "gateway is null");
        ExecutorService calls = Executors.newCachedThreadPool(daemons("sandgate-call-"));
        ExecutorService watchers = Executors.newCachedThreadPool(daemons("sandgate-watch-"));
        HealthStatusManager health = new HealthStatusManager();
        Server server = builder.directExecutor()
                .addService(new SandboxServiceImpl(gateway.lifecycle(), DEFAULT_WAIT, calls, watchers))
                .addService(health.getHealthService())
                .addService(ProtoReflectionServiceV1.newInstance())
                .build();
        try {
            server.start();
        } catch (IOException e) {
            calls.shutdownNow();
            watchers.shutdownNow();
            throw new UncheckedIOException("cannot start the gRPC server: " + e.getMessage(), e);
        }
        health.setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, ServingStatus.SERVING);
        health.setStatus(SandboxServiceGrpc.SERVICE_NAME, ServingStatus.SERVING);
        return new GatewayServer(server, health, calls, watchers);
    }

    private static ThreadFactory daemons(String prefix) {
        AtomicInteger count = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, prefix + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
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
        calls.shutdownNow();
        watchers.shutdownNow();
    }
}
