package dev.sandgate.driver.toolkit;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxRef;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Mutual exclusion per key (a sandbox id), within this JVM and across processes sharing one lock file: for a driver
 * whose backend is a directory several gateway processes may share.
 *
 * <p>A key hashes to one of {@link #SLOTS} one-byte regions of the lock file, locked with {@link FileChannel#tryLock}.
 * Keys that share a slot serialize with each other, which costs nothing at this scale and leaves no lock file behind
 * per sandbox. Within the JVM a {@link ReentrantLock} per slot comes first, because file locks are held per process:
 * two threads of one JVM must never ask for the same region.
 *
 * <p>There is exactly one channel per lock file in the JVM (closing any channel of a file may release every lock the
 * process holds on it), and no thread ever blocks inside the channel: an interrupted thread blocked in a {@link
 * FileChannel} closes it. The interrupt status is set aside while the channel is used and restored afterwards.
 *
 * <p>A lock is never held while calling out: {@link #beforeMutation} refuses to call the mutation hook under the
 * lock, since a hook (the conformance kit's, a remote driver's) may itself wait on this sandbox.
 */
public final class SlotLocks {
    /** How many regions the lock file has. */
    public static final int SLOTS = 256;

    private static final ConcurrentHashMap<Path, SlotLocks> BY_FILE = new ConcurrentHashMap<>();
    private static final Duration FIRST_PAUSE = Duration.ofNanos(100_000);
    private static final Duration LONGEST_PAUSE = Duration.ofMillis(20);

    private final Path file;
    private final ReentrantLock[] slots = new ReentrantLock[SLOTS];
    private FileChannel channel;

    private SlotLocks(Path file) {
        this.file = file;
        for (int i = 0; i < SLOTS; i++) {
            slots[i] = new ReentrantLock();
        }
    }

    /** The locks of {@code lockFile} (created on first use), shared by every user in this JVM. */
    public static SlotLocks of(Path lockFile) {
        return BY_FILE.computeIfAbsent(lockFile.toAbsolutePath().normalize(), SlotLocks::new);
    }

    /** Runs {@code action} holding the lock of {@code key}; reentrant within a thread. */
    public <T> T locked(String key, Supplier<T> action) {
        int slot = slot(key);
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

    /** Whether the current thread holds the lock of {@code key}. */
    public boolean isHeldByCurrentThread(String key) {
        return slots[slot(key)].isHeldByCurrentThread();
    }

    /**
     * Announces a mutation of {@code ref}'s resource {@code backendId} to {@code hook}, which must be called without
     * the lock of {@code ref.id()}: the hook may replace the resource or wait for another operation on it.
     *
     * @throws IllegalStateException if the current thread holds that lock (a driver bug)
     */
    public void beforeMutation(MutationHook hook, SandboxRef ref, MutationHook.Operation operation, String backendId) {
        requireNonNull(hook, "hook is null");
        if (isHeldByCurrentThread(ref.id())) {
            throw new IllegalStateException("the mutation hook for " + ref + " must be called without its lock");
        }
        hook.beforeMutation(ref, operation, backendId);
    }

    private static int slot(String key) {
        return Math.floorMod(key.hashCode(), SLOTS);
    }

    private FileLock acquire(int slot) {
        boolean interrupted = Thread.interrupted();
        try {
            var backoff = new Backoff(FIRST_PAUSE, LONGEST_PAUSE);
            while (true) {
                FileLock lock = channel().tryLock(slot, 1, false);
                if (lock != null) {
                    return lock;
                }
                // Another process holds the slot; it holds it only for a few file operations.
                interrupted |= backoff.pauseUninterruptibly();
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
