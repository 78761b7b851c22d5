package dev.sandgate.driver.host;

import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.StartResult;
import dev.sandgate.spi.StopResult;
import dev.sandgate.spi.WatchSubscription;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;

/**
 * For tests of a driver process that dies mid-call ({@code --provider-class}): the reference driver, except that
 * {@code stop} creates the file named by {@value #STOP_ENTERED} and then never returns, so that the test can kill the
 * process while the call is in flight.
 */
public final class StallingStopReferenceProvider implements ComputeDriverProvider {
    public static final String STOP_ENTERED = "stall.stop-entered-file";

    private final ReferenceDriverProvider reference = new ReferenceDriverProvider();

    @Override
    public String name() {
        return reference.name();
    }

    @Override
    public int priority() {
        return reference.priority();
    }

    @Override
    public Availability availability(DriverSettings config) {
        return reference.availability(config);
    }

    @Override
    public ComputeDriver create(DriverSettings config, DriverContext context) {
        ComputeDriver delegate = reference.create(config, context);
        Path entered = Path.of(config.require(STOP_ENTERED));
        return new ComputeDriver() {
            @Override
            public DriverCapabilities capabilities() {
                return delegate.capabilities();
            }

            @Override
            public void validate(SandboxSpec spec, LaunchInput launch) {
                delegate.validate(spec, launch);
            }

            @Override
            public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
                return delegate.create(ref, spec, launch);
            }

            @Override
            public SandboxObservation get(SandboxRef ref) {
                return delegate.get(ref);
            }

            @Override
            public List<SandboxObservation> list() {
                return delegate.list();
            }

            @Override
            public StartResult start(SandboxRef ref, LaunchInput launch) {
                return delegate.start(ref, launch);
            }

            @Override
            public StopResult stop(SandboxRef ref, OptionalLong expectedGeneration) {
                try {
                    Files.writeString(entered, ref.id());
                    new CountDownLatch(1).await(); // until the test kills this process
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                throw new IllegalStateException("stop stalls until the process is killed");
            }

            @Override
            public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
                return delegate.delete(ref, expectedGeneration);
            }

            @Override
            public WatchSubscription watch(SandboxWatcher watcher) {
                return delegate.watch(watcher);
            }

            @Override
            public void close() {
                delegate.close();
            }
        };
    }
}
