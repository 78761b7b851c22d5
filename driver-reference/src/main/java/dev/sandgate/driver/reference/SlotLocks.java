package dev.sandgate.driver.reference;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Mutual exclusion per resource key, within this JVM and across processes sharing one gateway folder.
 *
 * <p>Each gateway folder has one lock file; a key hashes to one of {@link #SLOTS} one-byte regions of it, locked with
 * {@link FileChannel#tryLock}. Keys that share a slot serialize with each other, which costs nothing at this scale and
 * leaves no lock file behind per sandbox. Within the JVM a {@link ReentrantLock} per slot comes first, because file
 * locks are held per process: two threads of one JVM must never ask for the same region.
 *
 * <p>There is exactly one channel per lock file in the JVM (closing any channel of a file may release every lock the
 * process holds on it), and no thread ever blocks inside the channel: an interrupted thread blocked in a {@link
 * FileChannel} closes it. The interrupt status is set aside while the channel is used and restored afterwards.
 */
final class SlotLocks {
    static final int SLOTS = 256;

    private static final ConcurrentHashMap<Path, SlotLocks> BY_FILE = new ConcurrentHashMap<>();
    private static final long MAX_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    private final Path file;
    private final ReentrantLock[] slots = new ReentrantLock[SLOTS];
    private FileChannel channel;

    private SlotLocks(Path file) {
        this.file = file;
        for (int i = 0; i < SLOTS; i++) {
            slots[i] = new ReentrantLock();
        }
    }

    /** The locks of {@code lockFile}, shared by every user in this JVM. */
    static SlotLocks of(Path lockFile) {
        return BY_FILE.computeIfAbsent(lockFile.toAbsolutePath().normalize(), SlotLocks::new);
    }

    <T> T locked(String key, Supplier<T> action) {
        int slot = Math.floorMod(key.hashCode(), SLOTS);
        ReentrantLock lock = slots[slot];
        lock.lock();
        try {
            if (lock.getHoldCount() > 1) {
                return action.get(); // this thread already holds the slot, file lock included
            }
            FileLock fileLock = acquire(slot);
            try {
                return action.get();
            } finally {
                release(fileLock);
            }
        } finally {
            lock.unlock();
        }
    }

    boolean isHeldByCurrentThread(String key) {
        return slots[Math.floorMod(key.hashCode(), SLOTS)].isHeldByCurrentThread();
    }

    private FileLock acquire(int slot) {
        boolean interrupted = Thread.interrupted();
        try {
            long backoff = TimeUnit.MICROSECONDS.toNanos(100);
            while (true) {
                FileLock lock = channel().tryLock(slot, 1, false);
                if (lock != null) {
                    return lock;
                }
                // Another process holds the slot; it holds it only for a few file operations.
                LockSupport.parkNanos(backoff);
                interrupted |= Thread.interrupted();
                backoff = Math.min(backoff * 2, MAX_BACKOFF_NANOS);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot lock " + file, e);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void release(FileLock lock) {
        boolean interrupted = Thread.interrupted();
        try {
            lock.release();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot unlock " + file, e);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private synchronized FileChannel channel() throws IOException {
        if (channel == null || !channel.isOpen()) {
            channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        }
        return channel;
    }
}
