package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.WatchSubscription;
import java.nio.file.Path;

/** Bug: the watch delivers every deletion twice (as a driver that maps two backend events to Deleted would). */
public class DuplicatesDeletedEventsKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public WatchSubscription watch(SandboxWatcher watcher) {
                return delegate.watch(new SandboxWatcher() {
                    @Override
                    public void onEvent(SandboxEvent event) {
                        watcher.onEvent(event);
                        if (event instanceof SandboxEvent.Deleted) {
                            watcher.onEvent(event);
                        }
                    }

                    @Override
                    public void onError(DriverException error) {
                        watcher.onError(error);
                    }
                });
            }
        };
    }
}
