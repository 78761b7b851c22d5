package dev.sandgate.gateway.server;

import static java.util.Objects.requireNonNull;

import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.gateway.grpc.MalformedRequestLog;
import dev.sandgate.gateway.grpc.MalformedRequests;
import dev.sandgate.gateway.grpc.SandboxServiceImpl;
import dev.sandgate.gateway.metrics.GatewayObserver;
import dev.sandgate.gateway.metrics.GrpcMetricsInterceptor;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves a {@link Gateway} over gRPC: the SandboxService, gRPC health checking and server reflection. It takes a
 * {@link ServerBuilder} so that tests run it in-process and over real Netty alike.
 */
public final class GatewayServer implements AutoCloseable {
    /** How long an operation waits for a busy sandbox when the client set no deadline. */
    public static final Duration DEFAULT_WAIT = Duration.ofSeconds(30);
    /** How long {@link #close()} lets the calls in flight finish before it cancels them. */
    public static final Duration DRAIN = Duration.ofSeconds(5);

    private static final Logger log = LoggerFactory.getLogger(GatewayServer.class);
    /** Threads that send on every watch stream, whatever their number. */
    private static final int WATCH_THREADS = Math.max(2, Runtime.getRuntime().availableProcessors());

    private final Server server;
    private final HealthStatusManager health;
    private final ExecutorService calls;
    private final ExecutorService watchers;
    private final SandboxServiceImpl service;
    private GatewayObserver observer = GatewayObserver.NONE;
    private EngineReadiness readiness;

    private GatewayServer(
            Server server,
            HealthStatusManager health,
            SandboxServiceImpl service,
            ExecutorService calls,
            ExecutorService watchers) {
        this.server = server;
        this.health = health;
        this.service = service;
        this.calls = calls;
        this.watchers = watchers;
    }

    /**
     * Starts a server from {@code builder}, which this sets to {@code directExecutor()}: gRPC's callbacks run on the
     * transport's threads, and every service registered here returns at once. The SandboxService hands each call's work
     * to a thread of its own ({@code sandgate-call-*}), and every watch stream sends on a small pool ({@code
     * sandgate-watch-*}); health checks and reflection answer in place. With gRPC's default executor instead, every call passed between threads
     * at each of its callbacks (and once more when it closed).
     */
    public static GatewayServer start(Gateway gateway, ServerBuilder<?> builder) {
        return start(gateway, builder, List.of());
    }

    /**
     * As {@link #start(Gateway, ServerBuilder)}, with {@code interceptors} around the SandboxService (the first is
     * outermost). They run inside the guard against malformed request bytes, so they see the service's own request
     * types; health checks and reflection pass around them.
     */
    public static GatewayServer start(Gateway gateway, ServerBuilder<?> builder, List<ServerInterceptor> interceptors) {
        requireNonNull(gateway, "gateway is null");
        requireNonNull(interceptors, "interceptors is null");
        ExecutorService calls = Executors.newCachedThreadPool(daemons("sandgate-call-"));
        ExecutorService watchers = Executors.newFixedThreadPool(WATCH_THREADS, daemons("sandgate-watch-"));
        HealthStatusManager health = new HealthStatusManager();
        SandboxServiceImpl service = new SandboxServiceImpl(gateway.lifecycle(), DEFAULT_WAIT, calls, watchers);
        // Malformed request bytes get INVALID_ARGUMENT on every service, with one rate-limited log line.
        MalformedRequestLog malformed = MalformedRequestLog.toLogger();
        Gateway.Operability operability = gateway.operability();
        if (!GatewayObserver.NONE.equals(operability.observer())) {
            builder.intercept(new GrpcMetricsInterceptor(operability.observer()));
        }
        Server server = builder.directExecutor()
                .addService(MalformedRequests.guard(
                        ServerInterceptors.interceptForward(service.bindService(), interceptors), malformed))
                .addService(MalformedRequests.guard(health.getHealthService().bindService(), malformed))
                .addService(MalformedRequests.guard(
                        ProtoReflectionServiceV1.newInstance().bindService(), malformed))
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
        GatewayServer started = new GatewayServer(server, health, service, calls, watchers);
        started.observer = operability.observer();
        started.observer.serving(true);
        started.readiness = EngineReadiness.start(
                operability.engineCheck(), operability.readinessInterval(), health, operability.observer());
        return started;
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

    /**
     * Stops taking calls (health checks answer NOT_SERVING), ends every watch stream with UNAVAILABLE (reason
     * GATEWAY_SHUTTING_DOWN), lets the unary calls in flight finish for up to {@link #DRAIN}, then cancels the rest.
     * A cancelled call's transition stays recorded; the gateway completes it when it next starts.
     */
    @Override
    public void close() {
        readiness.close();
        observer.serving(false);
        health.enterTerminalState();
        server.shutdown();
        int watches = service.endWatches();
        log.info(
                "stopping: no new calls, watch streams ended: {}; calls in flight get up to {} s",
                watches,
                DRAIN.toSeconds());
        long deadline = System.nanoTime() + DRAIN.toNanos();
        try {
            // A watch that arrived just before the shutdown may register after the first sweep: sweep again.
            while (!server.awaitTermination(50, TimeUnit.MILLISECONDS)) {
                if (System.nanoTime() - deadline >= 0) {
                    log.warn(
                            "calls still running after {} s are cancelled; their transitions stay recorded and resume"
                                    + " at the next start",
                            DRAIN.toSeconds());
                    server.shutdownNow();
                    server.awaitTermination(DRAIN.toMillis(), TimeUnit.MILLISECONDS);
                    break;
                }
                service.endWatches();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            server.shutdownNow();
        }
        calls.shutdownNow();
        watchers.shutdownNow();
        service.close();
    }
}
