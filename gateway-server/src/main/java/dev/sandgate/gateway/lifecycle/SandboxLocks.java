package dev.sandgate.gateway.lifecycle;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One fair lock per sandbox id: lifecycle operations on one sandbox run one at a time, in arrival order; operations
 * on different sandboxes run concurrently. Entries are removed when nobody holds or waits for them.
 *
 * <p>Not Guava's {@code Striped}: it maps ids onto a fixed set of stripes, so two sandboxes sharing a stripe would
 * share a lock, and a driver call that holds one sandbox's lock until the driver timeout would make an unrelated
 * sandbox SANDBOX_BUSY. Exactly one lock per id, removed when unused, keeps operations on different sandboxes
 * independent and the table as small as the operations in progress.
 */
final class SandboxLocks {
    private final ConcurrentHashMap<String, Entry> locks = new ConcurrentHashMap<>();

    private static final class Entry {
        final ReentrantLock lock = new ReentrantLock(true);
        int users;
    }

    /** A held lock; closing it releases the lock. */
    interface Held extends AutoCloseable {
        @Override
        void close();
    }

    /** Waits up to {@code maxWait} for the sandbox's lock; SANDBOX_BUSY if it is not free in time. */
    Held acquire(String sandboxId, Duration maxWait) {
        Entry entry = locks.compute(sandboxId, (id, existing) -> {
            Entry e = existing == null ? new Entry() : existing;
            e.users++;
            return e;
        });
        boolean acquired = false;
        try {
            acquired = entry.lock.tryLock(Math.max(0, maxWait.toNanos()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            if (!acquired) {
                release(sandboxId, entry, false);
            }
        }
        if (!acquired) {
            throw new GatewayException(
                    ErrorReason.SANDBOX_BUSY,
                    "sandbox " + sandboxId + " is busy with another operation that did not finish within the deadline");
        }
        return () -> release(sandboxId, entry, true);
    }

    private void release(String sandboxId, Entry entry, boolean unlock) {
        if (unlock) {
            entry.lock.unlock();
        }
        locks.computeIfPresent(sandboxId, (id, e) -> {
            e.users--;
            return e.users == 0 ? null : e;
        });
    }

    /** How many sandboxes have a lock entry now (for tests: entries do not leak). */
    int size() {
        return locks.size();
    }
}
