package dev.sandgate.gateway.metrics;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.StartResult;
import dev.sandgate.spi.StopResult;
import dev.sandgate.spi.WatchSubscription;
import java.util.List;
import java.util.OptionalLong;
import java.util.function.Supplier;

/** Times every call to the driver that touches its backend, by operation and outcome (ok or the error code). */
public final class MeteredComputeDriver implements ComputeDriver {
    private final ComputeDriver driver;
    private final GatewayObserver observer;

    public MeteredComputeDriver(ComputeDriver driver, GatewayObserver observer) {
        this.driver = requireNonNull(driver, "driver is null");
        this.observer = requireNonNull(observer, "observer is null");
    }

    private <T> T timed(String operation, Supplier<T> call) {
        long started = System.nanoTime();
        String outcome = "ok";
        try {
            return call.get();
        } catch (DriverException e) {
            outcome = e.code().name();
            throw e;
        } catch (RuntimeException | Error e) {
            outcome = "INTERNAL";
            throw e;
        } finally {
            observer.driverCall(operation, outcome, System.nanoTime() - started);
        }
    }

    @Override
    public DriverCapabilities capabilities() {
        return driver.capabilities();
    }

    @Override
    public void validate(SandboxSpec spec, LaunchInput launch) {
        driver.validate(spec, launch);
    }

    @Override
    public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
        return timed("create", () -> driver.create(ref, spec, launch));
    }

    @Override
    public SandboxObservation get(SandboxRef ref) {
        return timed("get", () -> driver.get(ref));
    }

    @Override
    public List<SandboxObservation> list() {
        return timed("list", driver::list);
    }

    @Override
    public StartResult start(SandboxRef ref, LaunchInput launch) {
        return timed("start", () -> driver.start(ref, launch));
    }

    @Override
    public StopResult stop(SandboxRef ref, OptionalLong expectedGeneration) {
        return timed("stop", () -> driver.stop(ref, expectedGeneration));
    }

    @Override
    public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
        return timed("delete", () -> driver.delete(ref, expectedGeneration));
    }

    @Override
    public WatchSubscription watch(SandboxWatcher watcher) {
        return timed("watch", () -> driver.watch(watcher));
    }

    @Override
    public void close() {
        driver.close();
    }
}
