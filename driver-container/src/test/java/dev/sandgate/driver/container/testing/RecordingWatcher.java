package dev.sandgate.driver.container.testing;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxWatcher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/** Records a watch's events in order; tests wait for one with a deadline (woken by each event, no polling). */
public final class RecordingWatcher implements SandboxWatcher {
    private final List<SandboxEvent> events = new ArrayList<>();
    private final Duration timeout;
    private DriverException error;

    public RecordingWatcher(Duration timeout) {
        this.timeout = timeout;
    }

    @Override
    public synchronized void onEvent(SandboxEvent event) {
        events.add(event);
        notifyAll();
    }

    @Override
    public synchronized void onError(DriverException failure) {
        error = failure;
        notifyAll();
    }

    public synchronized List<SandboxEvent> events() {
        return List.copyOf(events);
    }

    /** The index of the first event at or after {@code fromIndex} matching {@code condition}; fails after the timeout. */
    public synchronized int await(int fromIndex, Predicate<SandboxEvent> condition, String description) {
        long deadline = System.nanoTime() + timeout.toNanos();
        int next = fromIndex;
        while (true) {
            for (; next < events.size(); next++) {
                if (condition.test(events.get(next))) {
                    return next;
                }
            }
            if (error != null) {
                throw new AssertionError("the watch failed while waiting for " + description, error);
            }
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                throw new AssertionError("no " + description + " within " + timeout + "; events: " + events);
            }
            try {
                wait(Math.max(1, remaining / 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for " + description, e);
            }
        }
    }
}
