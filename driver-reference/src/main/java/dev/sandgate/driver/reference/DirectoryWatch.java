package dev.sandgate.driver.reference;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.WatchSubscription;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * A watch subscription that polls the directory: the first scan is delivered as snapshots followed by {@link
 * SandboxEvent.Synced}; every later scan tells what changed since the one before, and each sandbox whose observation
 * changed is delivered as a snapshot, each sandbox that vanished as one {@link SandboxEvent.Deleted}.
 *
 * <p>One thread per subscription delivers every event, so the watcher is called in order and never concurrently.
 * Closing waits for a delivery in progress (unless called from inside it), and nothing is delivered afterwards.
 */
final class DirectoryWatch implements WatchSubscription {
    private static final System.Logger LOG = System.getLogger(DirectoryWatch.class.getName());

    /** One sandbox as a scan saw it: the resource incarnation and what the driver observed of it. */
    record Seen(String backendId, SandboxObservation observation) {
        Seen {
            requireNonNull(backendId, "backendId is null");
            requireNonNull(observation, "observation is null");
        }
    }

    /** The scans of one subscription; called by its thread only, except {@link #changed}. */
    interface Scanner {
        /** Every sandbox there is now. */
        Map<String, Seen> first();

        /** What changed since the previous scan. */
        Delta next();

        /** The driver changed the record under {@code key}: the next scan looks at it. Any thread. */
        void changed(String key);

        /**
         * The driver wrote {@code resource} under {@code key}, which had {@code version} once written: the next scan
         * looks at it, and need not read it again while the record still has that version. Any thread.
         */
        void wrote(String key, DirectoryBackend.Version version, StoredResource resource);
    }

    /** The sandboxes whose observation changed, and the last observation of those that vanished. */
    record Delta(List<Seen> changed, List<Seen> removed) {
        Delta {
            changed = List.copyOf(changed);
            removed = List.copyOf(removed);
        }
    }

    private final Scanner scan;
    private final SandboxWatcher watcher;
    private final long intervalNanos;
    private final Consumer<DirectoryWatch> onClose;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wakeUp = lock.newCondition();
    private final Thread thread;
    private boolean closed;

    DirectoryWatch(
            String name, Scanner scan, SandboxWatcher watcher, Duration interval, Consumer<DirectoryWatch> onClose) {
        this.scan = requireNonNull(scan, "scan is null");
        this.watcher = requireNonNull(watcher, "watcher is null");
        this.intervalNanos = interval.toNanos();
        this.onClose = requireNonNull(onClose, "onClose is null");
        this.thread = Thread.ofPlatform().name(name).daemon().unstarted(this::run);
    }

    void start() {
        thread.start();
    }

    /** The driver changed the record under {@code key}; the next poll looks at it. */
    void changed(String key) {
        scan.changed(key);
    }

    /** The driver wrote {@code resource} under {@code key}, at {@code version}; the next poll looks at it. */
    void wrote(String key, DirectoryBackend.Version version, StoredResource resource) {
        scan.wrote(key, version, resource);
    }

    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            wakeUp.signalAll();
        } finally {
            lock.unlock();
        }
        onClose.accept(this);
    }

    private void run() {
        try {
            for (Seen seen : scan.first().values()) {
                if (!deliver(new SandboxEvent.Snapshot(seen.observation()))) {
                    return;
                }
            }
            if (!deliver(new SandboxEvent.Synced())) {
                return;
            }
            while (awaitNextPoll()) {
                Delta delta = scan.next();
                for (Seen changed : delta.changed()) {
                    if (!deliver(new SandboxEvent.Snapshot(changed.observation()))) {
                        return;
                    }
                }
                for (Seen removed : delta.removed()) {
                    SandboxObservation last = removed.observation();
                    if (!deliver(new SandboxEvent.Deleted(last.ref(), last.generation()))) {
                        return;
                    }
                }
            }
        } catch (UncheckedIOException | IllegalStateException e) {
            fail(new DriverException(DriverErrorCode.UNAVAILABLE, "cannot read the reference directory", e));
        }
    }

    /** Delivers one event unless closed; false once closed. */
    private boolean deliver(SandboxEvent event) {
        lock.lock();
        try {
            if (closed) {
                return false;
            }
            try {
                watcher.onEvent(event);
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "a watcher failed on an event; the subscription continues", e);
            }
            return !closed;
        } finally {
            lock.unlock();
        }
    }

    private void fail(DriverException error) {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            watcher.onError(error);
        } finally {
            lock.unlock();
        }
        onClose.accept(this);
    }

    private boolean awaitNextPoll() {
        lock.lock();
        try {
            long remaining = intervalNanos;
            while (!closed && remaining > 0) {
                remaining = wakeUp.awaitNanos(remaining);
            }
            return !closed;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String toString() {
        return "DirectoryWatch[" + thread.getName() + ", every " + TimeUnit.NANOSECONDS.toMillis(intervalNanos)
                + " ms]";
    }
}
