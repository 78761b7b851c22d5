package dev.sandgate.driver.toolkit;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * Pauses between polls, doubling from a first pause up to a longest one: for waiting on a process, a file, a lock
 * another process holds or a backend object with a deadline the caller keeps. Not thread-safe: one per wait.
 */
public final class Backoff {
    private final long maxNanos;
    private long nanos;

    /**
     * @param first the first pause
     * @param max the longest pause
     */
    public Backoff(Duration first, Duration max) {
        if (first.isNegative() || first.isZero() || max.compareTo(first) < 0) {
            throw new IllegalArgumentException("need 0 < first <= max, got " + first + " and " + max);
        }
        this.nanos = first.toNanos();
        this.maxNanos = max.toNanos();
    }

    /**
     * Sleeps the current pause and doubles it.
     *
     * @param waitingFor what the caller waits for, for the message of the interrupted case ("QEMU")
     * @throws DriverException UNAVAILABLE if the thread is interrupted (its interrupt status is kept)
     */
    public void pause(String waitingFor) {
        try {
            Thread.sleep(Duration.ofNanos(nanos));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "interrupted while waiting for " + waitingFor, e);
        }
        grow();
    }

    /**
     * Parks for the current pause and doubles it, ignoring interrupts: for a wait that must not be cut short (a file
     * lock whose channel an interrupt would close).
     *
     * @return whether the thread was interrupted meanwhile; its interrupt status is cleared, the caller restores it
     */
    public boolean pauseUninterruptibly() {
        LockSupport.parkNanos(nanos);
        grow();
        return Thread.interrupted();
    }

    /** The pause the next call sleeps. */
    public Duration next() {
        return Duration.ofNanos(nanos);
    }

    private void grow() {
        nanos = Math.min(nanos * 2, maxNanos);
    }
}
