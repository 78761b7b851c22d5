package dev.sandgate.driver.vm;

import dev.sandgate.driver.toolkit.Backoff;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.LogStream;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StreamKind;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * A read of the workload's output of one execution ({@link dev.sandgate.spi.ComputeDriver#logs}). The guest writes
 * the workload's standard output and standard error to two virtio-serial ports, which QEMU writes to {@code
 * stdout.log} and {@code stderr.log} in the state directory. Every launch deletes both first, so QEMU creates them
 * anew: a file opened while the record still carries generation G (checked after opening) is G's output and no
 * other's, even if a start replaces the execution while it is read.
 *
 * <p>The files carry no times: {@link LogQuery#since()} skips a stream whose file was last written before it, and
 * delivers a stream written since then whole. A followed read ends once the execution's QEMU process is gone (stopped,
 * ended, replaced, deleted) and the rest of both files is delivered.
 */
final class VmLogs implements LogStream {
    private static final int CHUNK = 8192;

    private final SandboxRef ref;
    private final long generation;
    private final Supplier<Optional<VmRecord>> reread;
    private final String backendId;
    private final Optional<FileChannel> stdout;
    private final Optional<FileChannel> stderr;
    private final LogQuery query;
    private final LogListener listener;
    private final Duration interval;
    private volatile boolean closed;

    private VmLogs(
            SandboxRef ref,
            long generation,
            Supplier<Optional<VmRecord>> reread,
            String backendId,
            Optional<FileChannel> stdout,
            Optional<FileChannel> stderr,
            LogQuery query,
            LogListener listener,
            Duration interval) {
        this.ref = ref;
        this.generation = generation;
        this.reread = reread;
        this.backendId = backendId;
        this.stdout = stdout;
        this.stderr = stderr;
        this.query = query;
        this.listener = listener;
        this.interval = interval;
    }

    /**
     * Opens the output of execution {@code generation} of {@code record} (resolved and verified by the caller) and
     * delivers it to {@code listener} on a thread of its own.
     *
     * @param reread reads the sandbox's record again
     * @throws DriverException FAILED_PRECONDITION with a {@code generation} mismatch if the record carries another
     *     generation (before or after the files are opened), NOT_FOUND if the sandbox is deleted meanwhile
     */
    static VmLogs open(
            SandboxRef ref,
            long generation,
            VmRecord record,
            Path directory,
            Supplier<Optional<VmRecord>> reread,
            LogQuery query,
            LogListener listener,
            Duration interval) {
        PinnedExecution.requireGeneration(ref, generation, record);
        Optional<FileChannel> stdout = Optional.empty();
        Optional<FileChannel> stderr = Optional.empty();
        try {
            stdout = open(directory.resolve(StateStore.STDOUT_LOG), query.since());
            stderr = open(directory.resolve(StateStore.STDERR_LOG), query.since());
            VmRecord after = reread.get().orElseThrow(() -> DriverException.notFound(ref));
            if (!after.backendId().equals(record.backendId())) {
                throw DriverException.notFound(ref);
            }
            PinnedExecution.requireGeneration(ref, generation, after);
        } catch (IOException e) {
            closeQuietly(stdout);
            closeQuietly(stderr);
            throw new DriverException(
                    DriverErrorCode.UNAVAILABLE,
                    "cannot read the output of sandbox " + ref.id() + ": " + e.getMessage(),
                    e);
        } catch (RuntimeException e) {
            closeQuietly(stdout);
            closeQuietly(stderr);
            throw e;
        }
        var logs = new VmLogs(ref, generation, reread, record.backendId(), stdout, stderr, query, listener, interval);
        Thread.ofPlatform().daemon().name("sandgate-vm-logs-" + ref.id()).start(logs::deliver);
        return logs;
    }

    /** The file, positioned at its end if {@code since} is after its last write; empty if it does not exist. */
    private static Optional<FileChannel> open(Path file, Optional<Instant> since) throws IOException {
        FileChannel channel;
        try {
            channel = FileChannel.open(file, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
        try {
            if (since.isPresent() && Files.getLastModifiedTime(file).toInstant().isBefore(since.get())) {
                channel.position(channel.size());
            }
        } catch (IOException e) {
            channel.close();
            throw e;
        }
        return Optional.of(channel);
    }

    private void deliver() {
        var backoff = new Backoff(Duration.ofMillis(20), interval);
        try {
            while (!closed) {
                boolean readOut = drain(stdout, StreamKind.STDOUT);
                boolean read = drain(stderr, StreamKind.STDERR) || readOut;
                if (!query.follow()) {
                    break;
                }
                if (read) {
                    backoff = new Backoff(Duration.ofMillis(20), interval);
                } else if (ended()) {
                    drain(stdout, StreamKind.STDOUT);
                    drain(stderr, StreamKind.STDERR);
                    break;
                } else {
                    backoff.pause("the output of sandbox " + ref.id());
                }
            }
            end(listener::completed);
        } catch (IOException | RuntimeException e) {
            end(() -> listener.failed(new DriverException(
                    DriverErrorCode.UNAVAILABLE,
                    "reading the output of sandbox " + ref.id() + " failed: " + e.getMessage(),
                    e)));
        } finally {
            closeQuietly(stdout);
            closeQuietly(stderr);
        }
    }

    /** Whether execution {@code generation} has ended: its record is gone or replaced, or its process is gone. */
    private boolean ended() {
        Optional<VmRecord> record = reread.get();
        return record.isEmpty()
                || !record.get().backendId().equals(backendId)
                || record.get().generation() != generation
                || (record.get().phase() != VmRecord.Phase.LAUNCHING
                        && record.get().liveProcess().isEmpty());
    }

    /** Delivers what {@code file} holds past its position; whether there was anything. */
    private boolean drain(Optional<FileChannel> file, StreamKind stream) throws IOException {
        if (file.isEmpty()) {
            return false;
        }
        boolean any = false;
        ByteBuffer buffer = ByteBuffer.allocate(CHUNK);
        while (!closed) {
            buffer.clear();
            int read = file.get().read(buffer);
            if (read <= 0) {
                break;
            }
            any = true;
            byte[] data = Arrays.copyOf(buffer.array(), read);
            synchronized (this) {
                if (!closed) {
                    listener.output(stream, data);
                }
            }
        }
        return any;
    }

    private synchronized void end(Runnable callback) {
        if (!closed) {
            closed = true;
            callback.run();
        }
    }

    @Override
    public void close() {
        closed = true;
    }

    private static void closeQuietly(Optional<FileChannel> file) {
        file.ifPresent(channel -> {
            try {
                channel.close();
            } catch (IOException e) {
                // nothing to release
            }
        });
    }
}
