package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.WatchSubscription;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * Bug: the watch reports each restart as a deletion before the new execution's snapshot, as a driver that maps the
 * removal of an execution's container (a start replaces it) to Deleted would.
 */
public class ReportsRestartsAsDeletionsKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public WatchSubscription watch(SandboxWatcher watcher) {
                Map<String, SandboxObservation> last = new HashMap<>();
                return delegate.watch(new SandboxWatcher() {
                    @Override
                    public void onEvent(SandboxEvent event) {
                        if (event instanceof SandboxEvent.Snapshot snapshot) {
                            SandboxObservation now = snapshot.observation();
                            SandboxObservation before = last.put(now.ref().id(), now);
                            boolean restarted = before != null
                                    && now.state() == SandboxState.RUNNING
                                    && (before.state() != SandboxState.RUNNING
                                            || before.generation() < now.generation());
                            if (restarted) {
                                watcher.onEvent(new SandboxEvent.Deleted(before.ref(), before.generation()));
                            }
                        } else if (event instanceof SandboxEvent.Deleted deleted) {
                            last.remove(deleted.ref().id());
                        }
                        watcher.onEvent(event);
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
