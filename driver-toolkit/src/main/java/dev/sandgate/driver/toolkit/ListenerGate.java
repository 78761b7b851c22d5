package dev.sandgate.driver.toolkit;

import static java.util.Objects.requireNonNull;

/**
 * The callback rule of an exec or a logs stream ({@link dev.sandgate.spi.ComputeDriver#exec}, {@link
 * dev.sandgate.spi.ComputeDriver#logs}), kept in one place: output is delivered only before the final callback and
 * before the stream is closed, and exactly one final callback runs (exit, completion or failure), whichever thread
 * reaches it first. Callbacks run under one lock, so the listener sees them one at a time and in order.
 */
public final class ListenerGate {
    private final Object lock = new Object();
    private boolean finished; // guarded by lock
    private volatile boolean closed;

    /** Runs {@code delivery}, an output callback, unless the final callback has run or the stream was closed. */
    public void output(Runnable delivery) {
        requireNonNull(delivery, "delivery is null");
        synchronized (lock) {
            if (!finished && !closed) {
                delivery.run();
            }
        }
    }

    /** Runs {@code finalCallback} unless a final callback already ran; whether it ran. */
    public boolean finish(Runnable finalCallback) {
        requireNonNull(finalCallback, "finalCallback is null");
        synchronized (lock) {
            if (finished) {
                return false;
            }
            finished = true;
            finalCallback.run();
            return true;
        }
    }

    /** Ends the stream without a callback: its failure reaches the caller another way (a refusal thrown at start). */
    public void finishSilently() {
        synchronized (lock) {
            finished = true;
        }
    }

    /** Whether a final callback ran (or {@link #finishSilently} was called). */
    public boolean finished() {
        synchronized (lock) {
            return finished;
        }
    }

    /** Marks the stream closed: no output callback runs after this returns. Whether this call closed it. */
    public boolean close() {
        synchronized (lock) {
            if (closed) {
                return false;
            }
            closed = true;
            return true;
        }
    }

    /** Whether {@link #close} was called. */
    public boolean closed() {
        return closed;
    }
}
