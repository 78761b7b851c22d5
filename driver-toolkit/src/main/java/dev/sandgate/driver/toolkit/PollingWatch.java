package dev.sandgate.driver.toolkit;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.WatchSubscription;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * A watch subscription that polls: the first poll is delivered followed by {@link SandboxEvent.Synced}, every later
 * poll's events as they come, one poll every interval.
 *
 * <p>One thread per subscription delivers every event, so the watcher is called in order and never concurrently.
 * Closing waits for a delivery in progress (unless called from inside it), and nothing is delivered afterwards. A
 * watcher that throws is logged and the subscription continues; a poll that fails ends it with {@link
 * SandboxWatcher#onError}.
 */
public final class PollingWatch implements WatchSubscription {
    private static final System.Logger LOG = System.getLogger(PollingWatch.class.getName());

    /** The polls of one subscription; called by its thread only. */
    public interface Poller {
        /** A snapshot of every sandbox there is now. */
        List<SandboxEvent> first();

        /** What changed since the previous poll. */
        List<SandboxEvent> next();

        /**
         * The first poll, one event at a time to {@code deliver}, which answers false once the subscription is
         * closed; false if stopped so. By default {@link #first()}'s events; a poller of many sandboxes delivers
         * each as it finds it, so that the first snapshot is never held whole in memory.
         */
        default boolean first(Predicate<SandboxEvent> deliver) {
            for (SandboxEvent event : first()) {
                if (!deliver.test(event)) {
                    return false;
                }
            }
            return true;
        }
    }

    private final Poller poller;
    private final SandboxWatcher watcher;
    private final long intervalNanos;
    private final Function<RuntimeException, DriverException> failure;
    private final Runnable onClose;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wakeUp = lock.newCondition();
    private final Thread thread;
    private boolean closed;

    /**
     * A subscription that polls on its own daemon thread once {@link #start started}.
     *
     * @param name the thread's name
     * @param interval the pause between polls
     * @param failure what a poll's failure other than a {@link DriverException} tells the watcher (a file system
     *     failure is UNAVAILABLE, say)
     * @param onClose run once when the subscription ends, by close or failure (the driver forgets it)
     */
    public PollingWatch(
            String name,
            Duration interval,
            Poller poller,
            SandboxWatcher watcher,
            Function<RuntimeException, DriverException> failure,
            Runnable onClose) {
        this.poller = requireNonNull(poller, "poller is null");
        this.watcher = requireNonNull(watcher, "watcher is null");
        this.intervalNanos = interval.toNanos();
        this.failure = requireNonNull(failure, "failure is null");
        this.onClose = requireNonNull(onClose, "onClose is null");
        this.thread = Thread.ofPlatform().name(name).daemon().unstarted(this::run);
    }

    /** Starts polling; returns this subscription. */
    public PollingWatch start() {
        thread.start();
        return this;
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
            if (!poller.first(this::deliver) || !deliver(new SandboxEvent.Synced())) {
                return;
            }
            while (awaitNextPoll()) {
                if (!deliver(poller.next())) {
                    return;
                }
            }
        } catch (DriverException e) {
            fail(e);
        } catch (RuntimeException e) {
            fail(failure.apply(e));
        }
    }

    /** Delivers {@code events} in order unless closed; false once closed. */
    private boolean deliver(List<SandboxEvent> events) {
        for (SandboxEvent event : events) {
            if (!deliver(event)) {
                return false;
            }
        }
        lock.lock();
        try {
            return !closed;
        } finally {
            lock.unlock();
        }
    }

    /** Delivers {@code event} unless closed; false once closed. */
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

    @Override
    public String toString() {
        return "PollingWatch[" + thread.getName() + ", every " + TimeUnit.NANOSECONDS.toMillis(intervalNanos) + " ms]";
    }
}
