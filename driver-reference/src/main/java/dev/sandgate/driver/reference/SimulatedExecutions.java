package dev.sandgate.driver.reference;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.LogStream;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StreamKind;
import dev.sandgate.spi.TerminalSize;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The reference driver's simulated executions: what the spec's command prints at each launch (kept per generation,
 * for logs), and commands run by exec, all interpreted by {@link SimulatedShell}; no host process ever runs.
 *
 * <p>Each sandbox's folder holds {@code files/tmp/} (its simulated {@code /tmp}, kept across executions like a
 * container's file system) and {@code output/<generation>} (what the launches of that generation printed, a line
 * {@code <epoch millis> <O|E> <base64 bytes>} per chunk). A command is pinned to one execution: the resource's backend
 * id and generation, running. Every file it touches is written under the sandbox's lock after checking that execution
 * still runs, and it ends (its listener is told it failed) as soon as that execution is gone.
 */
final class SimulatedExecutions {
    static final String FILES = "files";
    static final String OUTPUT = "output";
    /** The exit code of a command killed by closing its process: a SIGKILL's, as a shell reports it. */
    static final int KILLED = 137;

    /** One execution: the resource's incarnation and its generation. */
    record Pin(SandboxRef ref, String backendId, long generation) {}

    /** Whether the pinned execution still runs; read without the lock. */
    interface Liveness {
        boolean runs(Pin pin);
    }

    private final DirectoryBackend backend;
    private final String gatewayId;
    private final Liveness liveness;
    private final Duration interval;
    private final Set<AutoCloseable> open = ConcurrentHashMap.newKeySet();

    SimulatedExecutions(DirectoryBackend backend, String gatewayId, Liveness liveness, Duration interval) {
        this.backend = requireNonNull(backend, "backend is null");
        this.gatewayId = requireNonNull(gatewayId, "gatewayId is null");
        this.liveness = requireNonNull(liveness, "liveness is null");
        this.interval = requireNonNull(interval, "interval is null");
    }

    // ---- launches

    /**
     * Runs the spec's command of a launch of {@code generation} and appends what it printed to that generation's
     * output. The caller holds the sandbox's lock and has just written the running record. The execution then runs
     * until it is stopped, whatever its command does: interpretation ends at its first {@code sleep}.
     */
    void launched(String key, long generation, List<String> command, Map<String, String> environment) {
        if (command.isEmpty()) {
            return; // the image's default: the reference images print nothing
        }
        var lines = new StringBuilder();
        var machine = new SimulatedShell.Machine() {
            @Override
            public void write(StreamKind stream, String text) {
                writeStdout(stream, text.getBytes(StandardCharsets.UTF_8));
            }

            @Override
            public void writeStdout(byte[] data) {
                writeStdout(StreamKind.STDOUT, data);
            }

            private void writeStdout(StreamKind stream, byte[] data) {
                lines.append(Instant.now().toEpochMilli())
                        .append(stream == StreamKind.STDERR ? " E " : " O ")
                        .append(Base64.getEncoder().encodeToString(data))
                        .append('\n');
            }

            @Override
            public Optional<byte[]> readStdin() {
                return Optional.empty();
            }

            @Override
            public void touch(String name) {
                touchFile(key, name);
            }

            @Override
            public boolean exists(String name) {
                return Files.exists(tmp(key).resolve(name));
            }

            @Override
            public void sleep(Duration duration) {
                throw new LaunchSleeps();
            }
        };
        try {
            new SimulatedShell(environment, machine).run(command);
        } catch (LaunchSleeps e) {
            // the command sleeps: it keeps running, and printed all it prints
        }
        if (!lines.isEmpty()) {
            Path output = backend.resourceFolder(gatewayId, key).resolve(OUTPUT);
            try {
                Files.createDirectories(output);
                Files.writeString(
                        output.resolve(Long.toString(generation)),
                        lines,
                        StandardCharsets.UTF_8,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot record the output of " + key, e);
            }
        }
    }

    private static final class LaunchSleeps extends RuntimeException {
        private static final long serialVersionUID = 1L;

        LaunchSleeps() {
            super(null, null, false, false);
        }
    }

    // ---- exec

    /** Starts {@code command} in the pinned execution, which the caller verified runs. */
    ExecProcess exec(Pin pin, ExecCommand command, Map<String, String> specEnvironment, ExecListener listener) {
        var environment = new java.util.HashMap<>(specEnvironment);
        environment.putAll(command.environment());
        var process = new Exec(pin, command, environment, listener);
        open.add(process);
        Thread.ofVirtual().name("sandgate-reference-exec-" + pin.ref().id()).start(process::run);
        return process;
    }

    /** The end of a command whose execution stopped or whose process was closed. */
    private static final class Ended extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final boolean killed;

        Ended(boolean killed) {
            super(null, null, false, false);
            this.killed = killed;
        }
    }

    private final class Exec implements ExecProcess, SimulatedShell.Machine {
        private final Pin pin;
        private final ExecCommand command;
        private final Map<String, String> environment;
        private final ExecListener listener;
        /** Standard input's chunks, then an empty element for its end. */
        private final LinkedBlockingQueue<Optional<byte[]>> stdin = new LinkedBlockingQueue<>();

        private boolean inputEnded;
        private volatile boolean closed;

        Exec(Pin pin, ExecCommand command, Map<String, String> environment, ExecListener listener) {
            this.pin = pin;
            this.command = command;
            this.environment = environment;
            this.listener = listener;
            if (!command.stdin()) {
                closeStdin();
            }
        }

        void run() {
            try {
                int code;
                try {
                    code = new SimulatedShell(environment, this).run(command.command());
                } catch (Ended ended) {
                    if (!ended.killed) {
                        listener.failed(new DriverException(
                                DriverErrorCode.UNAVAILABLE,
                                "execution generation " + pin.generation() + " of sandbox "
                                        + pin.ref().id() + " ended while the command ran"));
                        return;
                    }
                    code = KILLED;
                } catch (UncheckedIOException e) {
                    listener.failed(new DriverException(
                            DriverErrorCode.UNAVAILABLE, "the reference directory failed: " + e.getMessage(), e));
                    return;
                }
                listener.exited(closed ? KILLED : code);
            } finally {
                open.remove(this);
            }
        }

        private void requireLive() {
            if (closed) {
                throw new Ended(true);
            }
            if (!liveness.runs(pin)) {
                throw new Ended(false);
            }
        }

        @Override
        public void write(StreamKind stream, String text) {
            requireLive();
            listener.output(command.tty() ? StreamKind.STDOUT : stream, text.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public void writeStdout(byte[] data) {
            requireLive();
            listener.output(StreamKind.STDOUT, data.clone());
        }

        @Override
        public Optional<byte[]> readStdin() {
            while (true) {
                requireLive();
                Optional<byte[]> chunk;
                try {
                    chunk = stdin.poll(interval.toNanos(), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new Ended(true);
                }
                if (chunk != null) {
                    if (chunk.isEmpty()) {
                        stdin.add(chunk); // a later cat reads the end too
                    }
                    return chunk;
                }
            }
        }

        @Override
        public void touch(String name) {
            backend.locked(gatewayId, pin.ref().id(), () -> {
                requireLive(); // under the lock: a stop or a replacement cannot come between check and write
                touchFile(pin.ref().id(), name);
                return null;
            });
        }

        @Override
        public boolean exists(String name) {
            requireLive();
            return Files.exists(tmp(pin.ref().id()).resolve(name));
        }

        @Override
        public void sleep(Duration duration) {
            long deadline = System.nanoTime() + duration.toNanos();
            while (true) {
                requireLive();
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return;
                }
                try {
                    TimeUnit.NANOSECONDS.sleep(Math.min(left, interval.toNanos()));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new Ended(true);
                }
            }
        }

        @Override
        public void writeStdin(byte[] data) {
            if (!command.stdin()) {
                throw new IllegalStateException("the command was started without standard input");
            }
            synchronized (stdin) {
                if (!inputEnded) {
                    stdin.add(Optional.of(data.clone()));
                }
            }
        }

        @Override
        public void closeStdin() {
            synchronized (stdin) {
                if (!inputEnded) {
                    inputEnded = true;
                    stdin.add(Optional.empty());
                }
            }
        }

        @Override
        public void resize(TerminalSize size) {
            requireNonNull(size, "size is null"); // a simulated terminal has no size
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    // ---- logs

    /** Reads the output of the pinned execution, which the caller verified the resource carries. */
    LogStream logs(Pin pin, LogQuery query, LogListener listener) {
        var read = new Read(pin, query, listener);
        open.add(read);
        Thread.ofVirtual().name("sandgate-reference-logs-" + pin.ref().id()).start(read::run);
        return read;
    }

    private final class Read implements LogStream {
        private final Pin pin;
        private final LogQuery query;
        private final LogListener listener;
        private volatile boolean closed;
        private int delivered;

        Read(Pin pin, LogQuery query, LogListener listener) {
            this.pin = pin;
            this.query = query;
            this.listener = listener;
        }

        void run() {
            try {
                if (!deliverNew()) {
                    return;
                }
                if (query.follow()) {
                    while (liveness.runs(pin)) {
                        if (closed) {
                            return;
                        }
                        TimeUnit.NANOSECONDS.sleep(interval.toNanos());
                        if (!deliverNew()) {
                            return;
                        }
                    }
                    if (!deliverNew()) {
                        return;
                    }
                }
                if (!closed) {
                    listener.completed();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (UncheckedIOException e) {
                if (!closed) {
                    listener.failed(new DriverException(
                            DriverErrorCode.UNAVAILABLE, "the reference directory failed: " + e.getMessage(), e));
                }
            } finally {
                open.remove(this);
            }
        }

        /** Delivers the output written since the last call; false if the read is over (closed or replaced). */
        private boolean deliverNew() {
            List<String> lines = outputLines(pin);
            if (!sameIncarnation(pin)) {
                if (!closed) {
                    listener.failed(DriverException.replaced(pin.ref(), pin.backendId(), "logs"));
                }
                return false;
            }
            for (String line : lines.subList(delivered, lines.size())) {
                if (closed) {
                    return false;
                }
                String[] fields = line.split(" ", 3);
                Instant at = Instant.ofEpochMilli(Long.parseLong(fields[0]));
                if (query.since().isEmpty() || !at.isBefore(query.since().get())) {
                    listener.output(
                            fields[1].equals("E") ? StreamKind.STDERR : StreamKind.STDOUT,
                            Base64.getDecoder().decode(fields[2]));
                }
            }
            delivered = lines.size();
            return !closed;
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    /** Whether the resource under the pin's id is still the pinned incarnation (or is gone, which ends a read). */
    private boolean sameIncarnation(Pin pin) {
        return backend.read(gatewayId, pin.ref().id())
                .map(resource -> resource.backendId().equals(pin.backendId()))
                .orElse(true);
    }

    /** The complete lines of the pinned generation's output; a line being written is left for the next read. */
    private List<String> outputLines(Pin pin) {
        Path file = backend.resourceFolder(gatewayId, pin.ref().id())
                .resolve(OUTPUT)
                .resolve(Long.toString(pin.generation()));
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
        var lines = new ArrayList<String>();
        int start = 0;
        for (int end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
            lines.add(text.substring(start, end));
            start = end + 1;
        }
        return lines;
    }

    // ---- files

    private Path tmp(String key) {
        return backend.resourceFolder(gatewayId, key).resolve(FILES).resolve("tmp");
    }

    /** Creates {@code /tmp/<name>}; the caller holds the lock and checked that the resource folder is the pinned one. */
    private void touchFile(String key, String name) {
        Path tmp = tmp(key);
        try {
            if (!Files.isDirectory(tmp)) {
                // never createDirectories: a folder removed meanwhile must not be brought back
                Path files = tmp.getParent();
                if (!Files.isDirectory(files)) {
                    Files.createDirectory(files);
                }
                Files.createDirectory(tmp);
            }
            Files.createFile(tmp.resolve(name));
        } catch (FileAlreadyExistsException e) {
            // touch of an existing file
        } catch (IOException e) {
            throw new UncheckedIOException("cannot touch /tmp/" + name + " of " + key, e);
        }
    }

    /** Ends every command and read (the driver is closing); each command's listener gets its final callback. */
    void closeAll() {
        for (AutoCloseable closeable : List.copyOf(open)) {
            try {
                closeable.close();
            } catch (Exception e) {
                // both close methods only set a flag
            }
        }
    }
}
