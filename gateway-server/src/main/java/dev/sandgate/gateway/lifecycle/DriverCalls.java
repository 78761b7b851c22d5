package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's calls to its driver, each bounded by the driver timeout, in one of two ways. A call made for a client
 * that waits ({@link #callWatched}) runs on the client call's own thread, without a thread hop, and a watchdog tells
 * the client at the timeout that its transition is pending; the call goes on and its result is committed when it
 * comes. A call made for nobody in particular (recovery, retries, reconciliation: {@link #call}) is handed to a
 * driver-call thread and waited for up to the timeout; a late answer is ignored.
 */
final class DriverCalls implements AutoCloseable {
    /** Under the lifecycle's name: operators filter on it (docs/operations.md, "Logs"). */
    private static final Logger log = LoggerFactory.getLogger(Lifecycle.class);

    private final String driverName;
    private final Duration timeout;
    private final ExecutorService driverCalls;
    /** Answers the callers of driver calls made on their own threads that overran the driver timeout. */
    private final ScheduledExecutorService watchdog;

    private final Set<OverdueWatch> watched = ConcurrentHashMap.newKeySet();

    DriverCalls(String driverName, Duration timeout) {
        this.driverName = requireNonNull(driverName, "driverName is null");
        this.timeout = requireNonNull(timeout, "timeout is null");
        this.driverCalls = Executors.newCachedThreadPool(daemonThreads("sandgate-driver-call"));
        this.watchdog = Executors.newSingleThreadScheduledExecutor(daemonThreads("sandgate-driver-watchdog"));
        long checkEvery = Math.clamp(timeout.toMillis() / 8, 10L, 1_000L);
        var unused =
                watchdog.scheduleWithFixedDelay(this::answerOverdue, checkEvery, checkEvery, TimeUnit.MILLISECONDS);
    }

    /** The driver timeout. */
    Duration timeout() {
        return timeout;
    }

    /** A driver call watched for the driver timeout (one per call: identity matters). */
    private record OverdueWatch(
            long deadlineNanos, Consumer<GatewayException> overdue, Supplier<GatewayException> pending) {
        @Override
        public boolean equals(Object other) {
            return this == other;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(this);
        }
    }

    /**
     * A transition's driver call: on this thread if {@code deadline} has a client to tell when it is overdue ({@link
     * #callWatched}), else handed to a driver-call thread with the timeout ({@link #call(Callable)}).
     *
     * @param pending the {@code TRANSITION_PENDING} answer the client is owed at the timeout
     */
    <T> T call(Callable<T> work, CallDeadline deadline, Supplier<GatewayException> pending) {
        if (deadline.overdue().isEmpty()) {
            return call(work);
        }
        return callWatched(work, deadline.overdue().get(), pending);
    }

    /**
     * Runs {@code work} on this thread, the thread of a client call. If it has not answered by the driver timeout,
     * {@code overdue} is called once, from the watchdog's thread, with what {@code pending} builds then (the {@code
     * TRANSITION_PENDING} answer the client is owed); {@code work} goes on, and whatever comes of it after that is for
     * nobody but the commit.
     */
    private <T> T callWatched(
            Callable<T> work, Consumer<GatewayException> overdue, Supplier<GatewayException> pending) {
        OverdueWatch watch = new OverdueWatch(System.nanoTime() + timeout.toNanos(), overdue, pending);
        watched.add(watch);
        try {
            return work.call();
        } catch (DriverException e) {
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "interrupted while calling the driver");
        } catch (Throwable e) {
            if (e instanceof VirtualMachineError fatal) {
                throw fatal;
            }
            throw driverFailed(e);
        } finally {
            watched.remove(watch);
        }
    }

    /**
     * Runs {@code work} on a driver-call thread and waits for it up to the driver timeout (DEADLINE_EXCEEDED after).
     * A late answer is ignored; a transition it was made for stays pending.
     */
    <T> T call(Callable<T> work) {
        Future<T> future = driverCalls.submit(work);
        try {
            return future.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof DriverException driverException) {
                throw driverException;
            }
            throw driverFailed(e.getCause());
        } catch (TimeoutException e) {
            throw new DriverException(
                    DriverErrorCode.DEADLINE_EXCEEDED, "driver " + driverName + " did not answer within " + timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "interrupted while waiting for the driver");
        }
    }

    /** A driver call that threw something other than a {@link DriverException}: the driver's own failure. */
    private DriverException driverFailed(Throwable cause) {
        return new DriverException(
                DriverErrorCode.INTERNAL,
                "driver " + driverName + " failed: " + cause.getClass().getSimpleName(),
                cause);
    }

    /** Tells the callers of driver calls that overran the driver timeout that their transitions are pending. */
    @SuppressWarnings("ModifyCollectionInEnhancedForLoop") // a concurrent set: its iterator tolerates removal
    private void answerOverdue() {
        long now = System.nanoTime();
        for (OverdueWatch watch : watched) {
            if (now - watch.deadlineNanos() >= 0 && watched.remove(watch)) {
                // Nothing may escape: an exception would end this periodic task.
                try {
                    GatewayException pending = watch.pending().get();
                    log.warn("{}; the caller is told so now", pending.getMessage());
                    watch.overdue().accept(pending);
                } catch (RuntimeException e) {
                    log.warn("answering the caller of an overdue driver call failed", e);
                }
            }
        }
    }

    static ThreadFactory daemonThreads(String prefix) {
        AtomicInteger count = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, prefix + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }

    /** Stops the watchdog; lets running driver calls finish for a few seconds, then interrupts them. */
    @Override
    public void close() {
        watchdog.shutdownNow();
        driverCalls.shutdown();
        try {
            if (!driverCalls.awaitTermination(5, TimeUnit.SECONDS)) {
                driverCalls.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            driverCalls.shutdownNow();
        }
    }
}
