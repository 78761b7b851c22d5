package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.WatchSubscription;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A watch subscription that polls the gateway's state directories and VMs. The first scan is delivered as snapshots
 * followed by {@link SandboxEvent.Synced}; each later scan is compared with the previous one: a sandbox whose
 * observation changed is delivered as a snapshot, one that vanished as one {@link SandboxEvent.Deleted}, and the lines
 * its guest reported since the last scan (boot stages, ready, exit) as {@link SandboxEvent.Platform} events before
 * its snapshot.
 *
 * <p>Every event carries the generation of the record it was read with, and a guest's report is only attributed to
 * the process that wrote it, so an old generation's exit never shows up as a newer generation's.
 *
 * <p>One thread per subscription delivers every event, in order and never concurrently. Closing waits for a delivery
 * in progress (unless called from inside it); nothing is delivered afterwards.
 */
final class VmWatch implements WatchSubscription {
    private static final Logger LOG = LoggerFactory.getLogger(VmWatch.class);

    /** What the previous scan saw of one sandbox. */
    private record Seen(
            String backendId, Optional<ProcessIdentity> process, int reportedLines, SandboxObservation observation) {
        boolean sameExecution(VmDriver.Sample sample) {
            return backendId.equals(sample.backendId())
                    && process.equals(sample.process())
                    && observation.generation() == sample.observation().generation();
        }
    }

    private final Supplier<List<VmDriver.Sample>> scan;
    private final SandboxWatcher watcher;
    private final long intervalNanos;
    private final Runnable onClose;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wakeUp = lock.newCondition();
    private final Thread thread;
    private boolean closed;

    VmWatch(
            String name,
            Supplier<List<VmDriver.Sample>> scan,
            SandboxWatcher watcher,
            Duration interval,
            Runnable onClose) {
        this.scan = requireNonNull(scan, "scan is null");
        this.watcher = requireNonNull(watcher, "watcher is null");
        this.intervalNanos = interval.toNanos();
        this.onClose = requireNonNull(onClose, "onClose is null");
        this.thread = Thread.ofPlatform().name(name).daemon().unstarted(this::run);
    }

    void start() {
        thread.start();
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
        onClose.run();
    }

    private void run() {
        try {
            var known = new HashMap<String, Seen>();
            for (VmDriver.Sample sample : scan.get()) {
                known.put(id(sample), seen(sample));
                if (!deliver(new SandboxEvent.Snapshot(sample.observation()))) {
                    return;
                }
            }
            if (!deliver(new SandboxEvent.Synced())) {
                return;
            }
            while (awaitNextPoll()) {
                var now = new HashMap<String, Seen>();
                for (VmDriver.Sample sample : scan.get()) {
                    String id = id(sample);
                    Seen before = known.get(id);
                    now.put(id, seen(sample));
                    if (!deliverReport(sample, before)) {
                        return;
                    }
                    if ((before == null || !before.observation().equals(sample.observation()))
                            && !deliver(new SandboxEvent.Snapshot(sample.observation()))) {
                        return;
                    }
                }
                for (var entry : known.entrySet()) {
                    if (!now.containsKey(entry.getKey())) {
                        SandboxObservation last = entry.getValue().observation();
                        if (!deliver(new SandboxEvent.Deleted(last.ref(), last.generation()))) {
                            return;
                        }
                    }
                }
                known = now;
            }
        } catch (DriverException e) {
            fail(e);
        } catch (RuntimeException e) {
            LOG.error("the VM watch failed", e);
            fail(new DriverException(DriverErrorCode.INTERNAL, "the VM watch failed: " + e.getMessage(), e));
        }
    }

    /** The guest's report lines that {@code before} has not delivered yet, as platform events. */
    private boolean deliverReport(VmDriver.Sample sample, Seen before) {
        List<String> lines = sample.report().lines();
        int from = before != null && before.sameExecution(sample) ? before.reportedLines() : 0;
        SandboxObservation observation = sample.observation();
        for (String line : lines.subList(Math.min(from, lines.size()), lines.size())) {
            int space = line.indexOf(' ');
            String type = "vm." + (space < 0 ? line : line.substring(0, space));
            String message = space < 0 ? line : line.substring(space + 1);
            if (!deliver(new SandboxEvent.Platform(observation.ref(), observation.generation(), type, message))) {
                return false;
            }
        }
        return true;
    }

    private static Seen seen(VmDriver.Sample sample) {
        return new Seen(
                sample.backendId(), sample.process(), sample.report().lines().size(), sample.observation());
    }

    private static String id(VmDriver.Sample sample) {
        return sample.observation().ref().id();
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
                LOG.warn("a watcher failed on an event; the subscription continues", e);
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
        onClose.run();
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
}
