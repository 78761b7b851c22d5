package dev.sandgate.driver.toolkit;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * One lock per key (a sandbox id) within this JVM, created on demand and dropped when nobody holds or waits for it:
 * for a driver whose backend serializes writers itself (an engine, an API server) and that only needs its own
 * operations on one sandbox to take turns. A wait is bounded, so a stuck operation shows up as DEADLINE_EXCEEDED
 * rather than as a pile of blocked calls. (A backend that is a shared directory needs {@link SlotLocks}.)
 */
public final class KeyedLocks {
    private final Map<String, Entry> entries = new HashMap<>();

    private static final class Entry {
        final ReentrantLock lock = new ReentrantLock();
        int users;
    }

    /** A held lock; closing it releases it. */
    public interface Held extends AutoCloseable {
        @Override
        void close();
    }

    /**
     * Locks {@code key}, waiting at most {@code timeout}.
     *
     * @throws DriverException DEADLINE_EXCEEDED if another operation holds the key for longer
     */
    public Held lock(String key, Duration timeout) {
        Entry entry;
        synchronized (entries) {
            entry = entries.computeIfAbsent(key, k -> new Entry());
            entry.users++;
        }
        boolean locked = false;
        try {
            locked = entry.lock.tryLock(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            if (!locked) {
                release(key, entry, false);
            }
        }
        if (!locked) {
            throw new DriverException(
                    DriverErrorCode.DEADLINE_EXCEEDED,
                    "another operation on sandbox " + key + " did not finish within " + timeout);
        }
        Entry held = entry;
        return () -> release(key, held, true);
    }

    /** Runs {@code operation} holding the lock of {@code key} (see {@link #lock}). */
    public <T> T call(String key, Duration timeout, Supplier<T> operation) {
        Held held = lock(key, timeout);
        try {
            return operation.get();
        } finally {
            held.close();
        }
    }

    /**
     * Whether an operation holds the lock of {@code key} right now. A caller that is only waiting for it does not
     * count.
     */
    public boolean isHeld(String key) {
        synchronized (entries) {
            Entry entry = entries.get(key);
            return entry != null && entry.lock.isLocked();
        }
    }

    /** How many keys have a lock right now (for tests). */
    public int size() {
        synchronized (entries) {
            return entries.size();
        }
    }

    private void release(String key, Entry entry, boolean unlock) {
        if (unlock) {
            entry.lock.unlock();
        }
        synchronized (entries) {
            if (--entry.users == 0) {
                entries.remove(key);
            }
        }
    }
}
