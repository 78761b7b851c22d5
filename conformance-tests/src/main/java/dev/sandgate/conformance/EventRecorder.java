package dev.sandgate.conformance;

import static org.assertj.core.api.Assertions.fail;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxWatcher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;

/** Records a watch subscription's events in order, and waits for one with a deadline (no polling). */
final class EventRecorder implements SandboxWatcher {
    private final List<SandboxEvent> events = new ArrayList<>();
    private final Duration timeout;
    private DriverException error;

    EventRecorder(Duration timeout) {
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

    synchronized List<SandboxEvent> events() {
        return List.copyOf(events);
    }

    /** Waits for the first event at or after {@code fromIndex} that matches; returns its index. */
    synchronized int await(int fromIndex, Predicate<SandboxEvent> matches, String description) {
        long deadline = System.nanoTime() + timeout.toNanos();
        int next = fromIndex;
        while (true) {
            for (; next < events.size(); next++) {
                if (matches.test(events.get(next))) {
                    return next;
                }
            }
            if (error != null) {
                throw new AssertionError("the watch failed while waiting for " + description, error);
            }
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                return fail("no %s within %s; events so far: %s", description, timeout, events);
            }
            try {
                wait(Math.max(1, remaining / 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for " + description, e);
            }
        }
    }

    synchronized Optional<DriverException> error() {
        return Optional.ofNullable(error);
    }

    /** The sandbox id an event is about; empty for {@link SandboxEvent.Synced}. */
    static Optional<String> sandboxId(SandboxEvent event) {
        return switch (event) {
            case SandboxEvent.Snapshot snapshot ->
                Optional.of(snapshot.observation().ref().id());
            case SandboxEvent.Deleted deleted -> Optional.of(deleted.ref().id());
            case SandboxEvent.Platform platform -> Optional.of(platform.ref().id());
            case SandboxEvent.Synced synced -> Optional.empty();
        };
    }
}
