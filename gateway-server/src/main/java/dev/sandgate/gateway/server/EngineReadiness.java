package dev.sandgate.gateway.server;

import static java.util.Objects.requireNonNull;

import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.gateway.metrics.GatewayObserver;
import dev.sandgate.spi.Availability;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.protobuf.services.HealthStatusManager;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Readiness: asks whether the driver's engine answers every interval, and sets the health of {@code
 * sandgate.v1.SandboxService} to NOT_SERVING while it does not, SERVING again once it does. The whole server's health
 * (service {@code ""}, the liveness probe) stays SERVING: the process is alive, only its engine is not.
 */
final class EngineReadiness implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(EngineReadiness.class);

    private final Supplier<Availability> check;
    private final HealthStatusManager health;
    private final GatewayObserver observer;
    private final ScheduledExecutorService thread;
    private volatile boolean available = true;

    private EngineReadiness(Supplier<Availability> check, HealthStatusManager health, GatewayObserver observer) {
        this.check = requireNonNull(check, "check is null");
        this.health = requireNonNull(health, "health is null");
        this.observer = requireNonNull(observer, "observer is null");
        this.thread = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread t = new Thread(runnable, "sandgate-readiness");
            t.setDaemon(true);
            return t;
        });
    }

    /** Checks now and then every {@code interval}; the first check runs at once. */
    static EngineReadiness start(
            Supplier<Availability> check, Duration interval, HealthStatusManager health, GatewayObserver observer) {
        EngineReadiness readiness = new EngineReadiness(check, health, observer);
        var unused = readiness.thread.scheduleWithFixedDelay(
                readiness::checkOnce, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
        return readiness;
    }

    private void checkOnce() {
        Availability now;
        try {
            now = check.get();
        } catch (RuntimeException e) {
            now = Availability.unavailable("the engine check failed: " + e);
        }
        observer.engineAvailable(now.available());
        if (now.available() == available) {
            return;
        }
        available = now.available();
        if (available) {
            log.info("the driver's engine answers again: {} is SERVING", SandboxServiceGrpc.SERVICE_NAME);
            health.setStatus(SandboxServiceGrpc.SERVICE_NAME, ServingStatus.SERVING);
        } else {
            log.warn(
                    "the driver's engine is unavailable ({}): {} is NOT_SERVING until it answers",
                    now.reason(),
                    SandboxServiceGrpc.SERVICE_NAME);
            health.setStatus(SandboxServiceGrpc.SERVICE_NAME, ServingStatus.NOT_SERVING);
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
