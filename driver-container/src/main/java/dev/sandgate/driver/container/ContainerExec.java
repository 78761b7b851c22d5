package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.command.InspectExecResponse;
import dev.sandgate.driver.toolkit.Backoff;
import dev.sandgate.driver.toolkit.ListenerGate;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.StreamKind;
import dev.sandgate.spi.TerminalSize;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One command run in a container by its ID ({@link dev.sandgate.spi.ComputeDriver#exec}): an engine exec instance,
 * started over a hijacked connection ({@link EngineAttach}) that carries standard input one way and the output (one
 * multiplexed stream, or the terminal's) the other. A reader thread hands the output to the listener in order; when
 * the engine ends the stream, the exit code comes from inspecting the exec instance.
 *
 * <p>The engines have no call that ends an exec instance. Every command carries {@value #MARKER_VARIABLE} (a random
 * value) in its environment, which its children inherit; closing a command that still runs starts a second exec in
 * the same container that kills every process carrying that value. That needs {@code sh}, {@code tr} and {@code grep}
 * in the image; where they are missing the command keeps running, and only the callbacks stop.
 */
final class ContainerExec implements ExecProcess {
    private static final Logger log = LoggerFactory.getLogger(ContainerExec.class);

    /** The environment variable that marks a command's processes, so that closing the command can find them. */
    static final String MARKER_VARIABLE = "SANDGATE_EXEC_ID";

    private static final String KILL_SCRIPT = "for p in /proc/[0-9]*; do"
            + " if tr '\\0' '\\n' < \"$p/environ\" 2>/dev/null | grep -qxF \"" + MARKER_VARIABLE + "=$1\"; then"
            + " kill -9 \"${p#/proc/}\" 2>/dev/null; fi; done";

    private final EngineExecs engine;
    private final String containerId;
    private final String execId;
    private final String marker;
    private final ExecCommand command;
    private final ExecListener listener;
    private final EngineAttach attach;
    private final ListenerGate gate = new ListenerGate();

    private ContainerExec(
            EngineExecs engine,
            String containerId,
            String execId,
            String marker,
            ExecCommand command,
            ExecListener listener,
            EngineAttach attach) {
        this.engine = engine;
        this.containerId = containerId;
        this.execId = execId;
        this.marker = marker;
        this.command = command;
        this.listener = listener;
        this.attach = attach;
    }

    /** The environment of {@code command} as the engine takes it, marked with {@code marker}. */
    static List<String> environment(ExecCommand command, String marker) {
        if (command.environment().containsKey(MARKER_VARIABLE)) {
            throw DriverException.invalidArgument(
                    "command.environment", MARKER_VARIABLE + " is reserved: the driver sets it to find the command");
        }
        var environment = new ArrayList<String>();
        for (Map.Entry<String, String> entry : command.environment().entrySet()) {
            if (entry.getKey().isEmpty() || entry.getKey().contains("=")) {
                throw DriverException.invalidArgument(
                        "command.environment", "a variable name must be non-empty and without '='");
            }
            environment.add(entry.getKey() + "=" + entry.getValue());
        }
        environment.add(MARKER_VARIABLE + "=" + marker);
        return environment;
    }

    /** A fresh marker value. */
    static String newMarker() {
        return UUID.randomUUID().toString();
    }

    /**
     * Starts exec instance {@code execId} (created in {@code containerId} with {@code marker}) and returns once the
     * engine has attached it; the output then reaches {@code listener}.
     */
    static ContainerExec start(
            EngineExecs engine,
            String containerId,
            String execId,
            String marker,
            ExecCommand command,
            ExecListener listener) {
        EngineAttach attach = EngineAttach.post(
                engine.settings(),
                "/exec/" + execId + "/start",
                "{\"Detach\":false,\"Tty\":" + command.tty() + "}",
                engine.settings().requestTimeout());
        var exec = new ContainerExec(engine, containerId, execId, marker, command, listener, attach);
        command.terminalSize().filter(size -> command.tty()).ifPresent(exec::resizeQuietly);
        Thread.ofPlatform()
                .daemon()
                .name("sandgate-exec-" + execId.substring(0, Math.min(12, execId.length())))
                .start(exec::relay);
        return exec;
    }

    @Override
    public void writeStdin(byte[] data) {
        requireNonNull(data, "data is null");
        if (!command.stdin()) {
            throw new IllegalStateException("the command was started without standard input");
        }
        if (gate.closed()) {
            return;
        }
        try {
            attach.write(data);
        } catch (IOException e) {
            log.debug("Writing to the standard input of exec {} failed: {}", execId, e.getMessage());
        }
    }

    @Override
    public void closeStdin() {
        if (!command.stdin() || gate.closed()) {
            return;
        }
        try {
            attach.closeOutput();
        } catch (IOException e) {
            log.debug("Closing the standard input of exec {} failed: {}", execId, e.getMessage());
        }
    }

    @Override
    public void resize(TerminalSize size) {
        requireNonNull(size, "size is null");
        if (command.tty() && !gate.closed()) {
            resizeQuietly(size);
        }
    }

    private void resizeQuietly(TerminalSize size) {
        try {
            engine.resizeExec(execId, size);
        } catch (DriverException e) {
            log.debug("Resizing the terminal of exec {} failed: {}", execId, e.getMessage());
        }
    }

    /**
     * Kills the command if it still runs (see the class comment), then ends the connection. A command that had not
     * ended yet is reported to the listener, before this returns, as failed (ABORTED: closed by the caller); after
     * that, no callback comes.
     */
    @Override
    public void close() {
        if (!gate.close()) {
            return;
        }
        if (!gate.finished()) {
            kill();
        }
        attach.close();
        finish(() -> listener.failed(new DriverException(
                DriverErrorCode.ABORTED, "the exec was closed before its command ended; the command was killed")));
    }

    /** Reads the engine's stream until it ends, then reports the exit code. Runs on the exec's own thread. */
    private void relay() {
        try {
            InputStream input = attach.input();
            if (command.tty()) {
                byte[] buffer = new byte[8192];
                for (int read = input.read(buffer); read >= 0; read = input.read(buffer)) {
                    deliver(StreamKind.STDOUT, java.util.Arrays.copyOf(buffer, read));
                }
            } else {
                while (true) {
                    byte[] header = input.readNBytes(8);
                    if (header.length < 8) {
                        break;
                    }
                    int size = ByteBuffer.wrap(header, 4, 4).getInt();
                    byte[] payload = input.readNBytes(size);
                    // 1 is standard output, 2 standard error; 0 (standard input echoed) does not occur without tty.
                    deliver(header[0] == 2 ? StreamKind.STDERR : StreamKind.STDOUT, payload);
                    if (payload.length < size) {
                        break;
                    }
                }
            }
        } catch (IOException e) {
            if (!gate.closed()) {
                finish(() -> listener.failed(new DriverException(
                        DriverErrorCode.UNAVAILABLE,
                        "the connection to exec " + execId + " broke; the command's outcome is unknown: "
                                + e.getMessage(),
                        e)));
            }
            return;
        } catch (RuntimeException e) {
            log.warn("The listener of exec {} failed", execId, e);
            finish(() -> listener.failed(new DriverException(
                    DriverErrorCode.INTERNAL, "delivering the output of exec " + execId + " failed", e)));
            return;
        } finally {
            if (gate.closed()) {
                attach.close();
            }
        }
        attach.close();
        if (gate.closed()) {
            return;
        }
        Optional<Long> exitCode;
        try {
            exitCode = awaitExitCode();
        } catch (DriverException e) {
            finish(() -> listener.failed(e));
            return;
        }
        finish(() -> exitCode.ifPresentOrElse(
                code -> listener.exited(code.intValue()),
                () -> listener.failed(new DriverException(
                        DriverErrorCode.UNAVAILABLE,
                        "the engine reported no exit code for exec " + execId + " after its output ended"))));
    }

    private void deliver(StreamKind stream, byte[] data) {
        if (data.length == 0) {
            return;
        }
        gate.output(() -> listener.output(stream, data));
    }

    private void finish(Runnable finalCallback) {
        gate.finish(finalCallback);
    }

    /** The exit code once the engine reports the exec instance ended; empty if it does not within the request timeout. */
    private Optional<Long> awaitExitCode() {
        Instant deadline = Instant.now().plus(engine.settings().requestTimeout());
        var backoff = new Backoff(Duration.ofMillis(5), Duration.ofMillis(200));
        while (true) {
            InspectExecResponse inspected = engine.inspectExec(execId);
            if (!Boolean.TRUE.equals(inspected.isRunning()) && inspected.getExitCodeLong() != null) {
                return Optional.of(inspected.getExitCodeLong());
            }
            if (Instant.now().isAfter(deadline)) {
                return Optional.empty();
            }
            backoff.pause("the engine");
        }
    }

    /** Kills every process in the container that carries this command's marker; failures are only logged. */
    private void kill() {
        try {
            String killer = engine.createExec(
                    containerId,
                    new ExecCommand(
                            List.of("sh", "-c", KILL_SCRIPT, "sh", marker),
                            Map.of(),
                            Optional.empty(),
                            false,
                            false,
                            Optional.empty()),
                    List.of());
            try (EngineAttach killing = EngineAttach.post(
                    engine.settings(),
                    "/exec/" + killer + "/start",
                    "{\"Detach\":false,\"Tty\":false}",
                    engine.settings().requestTimeout())) {
                // Wait for the killer to end (its stream ends), but never longer than a request may take.
                CompletableFuture.delayedExecutor(
                                engine.settings().requestTimeout().toMillis(), TimeUnit.MILLISECONDS)
                        .execute(killing::close);
                killing.input().transferTo(java.io.OutputStream.nullOutputStream());
            }
        } catch (DriverException | IOException e) {
            log.debug("Could not kill the command of exec {} in container {}: {}", execId, containerId, e.getMessage());
        }
    }
}
