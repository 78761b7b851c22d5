package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.WatchSubscription;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * Bug: after a sandbox's newer generation is delivered, the watch delivers a late snapshot of its previous
 * generation (as a container driver that maps the old container's exit to a snapshot would).
 */
public class RegressesGenerationInWatchKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public WatchSubscription watch(SandboxWatcher watcher) {
                Map<String, SandboxObservation> last = new HashMap<>();
                return delegate.watch(new SandboxWatcher() {
                    @Override
                    public void onEvent(SandboxEvent event) {
                        watcher.onEvent(event);
                        if (event instanceof SandboxEvent.Snapshot snapshot) {
                            SandboxObservation now = snapshot.observation();
                            SandboxObservation previous = last.put(now.ref().id(), now);
                            if (previous != null && previous.generation() < now.generation()) {
                                watcher.onEvent(new SandboxEvent.Snapshot(previous));
                            }
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
