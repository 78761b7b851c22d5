package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.toolkit.ListenerGate;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StreamKind;
import dev.sandgate.spi.TerminalSize;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One command run by the guest agent of a verified QEMU process ({@link dev.sandgate.spi.ComputeDriver#exec}). The
 * command travels as a shell script ({@code cd}, {@code export} lines, {@code exec} of the argv, every word single-
 * quoted) in an {@code EXEC} frame naming the generation, which the agent refuses for another generation than its
 * boot's. The agent runs it in its own session, without a terminal; its standard output and standard error come back
 * as separate frames, then its exit code. Closing a command that still runs sends {@code KILL} (SIGKILL to its
 * session) and reports it as failed (ABORTED) at once.
 */
final class VmExec implements ExecProcess, GuestAgent.Frames {
    private static final Logger LOG = LoggerFactory.getLogger(VmExec.class);
    private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
    private static final int CHUNK = 3072;

    /** Where a command runs without a working directory: where the workload runs. */
    static final String DEFAULT_DIRECTORY = "/workspace";

    private final GuestAgent.Registry agents;
    private final GuestAgent agent;
    private final String id = GuestAgent.newId();
    private final SandboxRef ref;
    private final long generation;
    private final ExecCommand command;
    private final ExecListener listener;
    private final CompletableFuture<Void> started = new CompletableFuture<>();
    private final AtomicBoolean released = new AtomicBoolean();
    private final AtomicBoolean stdinClosed = new AtomicBoolean();
    private final ListenerGate gate = new ListenerGate();

    private VmExec(
            GuestAgent.Registry agents,
            GuestAgent agent,
            SandboxRef ref,
            long generation,
            ExecCommand command,
            ExecListener listener) {
        this.agents = agents;
        this.agent = agent;
        this.ref = ref;
        this.generation = generation;
        this.command = command;
        this.listener = listener;
    }

    /**
     * The shell script that runs {@code command}.
     *
     * @throws DriverException UNSUPPORTED for a terminal, INVALID_ARGUMENT for an environment name the guest's shell
     *     cannot set
     */
    static String script(ExecCommand command) {
        if (command.tty()) {
            throw new DriverException(
                    DriverErrorCode.UNSUPPORTED, "the vm driver runs commands without a terminal (command.tty)");
        }
        var script = new StringBuilder();
        script.append("cd ")
                .append(quote(command.workingDirectory().orElse(DEFAULT_DIRECTORY)))
                .append(" || exit 126\n");
        for (Map.Entry<String, String> variable : new TreeMap<>(command.environment()).entrySet()) {
            if (!NAME.matcher(variable.getKey()).matches()) {
                throw DriverException.invalidArgument(
                        "command.environment",
                        "a variable name must be letters, digits and '_', not starting with a digit");
            }
            script.append("export ")
                    .append(variable.getKey())
                    .append('=')
                    .append(quote(variable.getValue()))
                    .append('\n');
        }
        script.append("exec");
        for (String word : command.command()) {
            script.append(' ').append(quote(word));
        }
        return script.append('\n').toString();
    }

    private static String quote(String word) {
        return "'" + word.replace("'", "'\\''") + "'";
    }

    /**
     * Runs {@code command} in execution {@code generation}, whose QEMU process is {@code process}, and returns once
     * the guest agent started it.
     *
     * @throws DriverException FAILED_PRECONDITION (a {@code generation} mismatch if the guest booted another
     *     generation, a {@code running} one if the process is gone), UNAVAILABLE if the agent cannot be reached or
     *     does not confirm the start in time (the command is then killed, if it started)
     */
    static VmExec start(
            GuestAgent.Registry agents,
            SandboxRef ref,
            long generation,
            ProcessIdentity process,
            ExecCommand command,
            String script,
            ExecListener listener,
            Duration timeout) {
        GuestAgent agent;
        try {
            agent = agents.acquire(process);
        } catch (IOException e) {
            if (!process.alive()) {
                throw DriverException.notRunning(ref, generation);
            }
            throw new DriverException(
                    DriverErrorCode.UNAVAILABLE,
                    "cannot reach the guest agent of sandbox " + ref.id() + ": " + e.getMessage(),
                    e);
        }
        var exec = new VmExec(agents, agent, ref, generation, command, listener);
        try {
            if (agent.generation() != generation) {
                throw DriverException.generationMismatch(ref, generation, agent.generation());
            }
            if (!process.alive()) {
                throw DriverException.notRunning(ref, generation);
            }
            agent.register(exec.id, exec);
            String encoded = Base64.getEncoder().encodeToString(script.getBytes(StandardCharsets.UTF_8));
            agent.send("EXEC " + exec.id + " " + generation + " " + encoded + " " + (command.stdin() ? 1 : 0));
            exec.started.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            return exec;
        } catch (ExecutionException e) {
            exec.release();
            throw e.getCause() instanceof DriverException refused
                    ? refused
                    : new DriverException(
                            DriverErrorCode.UNAVAILABLE,
                            "the guest agent of sandbox " + ref.id() + " failed: "
                                    + e.getCause().getMessage(),
                            e.getCause());
        } catch (TimeoutException | IOException e) {
            exec.kill();
            exec.release();
            throw new DriverException(
                    DriverErrorCode.UNAVAILABLE,
                    "the guest agent of sandbox " + ref.id() + " did not confirm the start of the command within "
                            + timeout + "; it was killed if it started",
                    e);
        } catch (InterruptedException e) {
            exec.kill();
            exec.release();
            Thread.currentThread().interrupt();
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "interrupted while starting a command", e);
        } catch (RuntimeException e) {
            exec.release();
            throw e;
        }
    }

    @Override
    public void frame(String verb, List<String> fields) {
        switch (verb) {
            case "STARTED" -> started.complete(null);
            case "REFUSED" ->
                started.completeExceptionally(DriverException.generationMismatch(
                        ref, generation, fields.isEmpty() ? -1 : Long.parseLong(fields.get(0))));
            case "FAILED" ->
                started.completeExceptionally(new DriverException(
                        DriverErrorCode.UNAVAILABLE, "the guest agent could not start the command: " + fields));
            case "OUT" -> deliver(StreamKind.STDOUT, fields);
            case "ERR" -> deliver(StreamKind.STDERR, fields);
            case "EXIT" -> {
                int code = Integer.parseInt(fields.get(0));
                finish(() -> listener.exited(code));
                release();
            }
            default -> LOG.debug("ignoring the guest agent's frame {} of command {}", verb, id);
        }
    }

    @Override
    public void disconnected(IOException cause) {
        started.completeExceptionally(cause);
        finish(() -> listener.failed(new DriverException(
                DriverErrorCode.UNAVAILABLE,
                "the connection to the guest agent of sandbox " + ref.id()
                        + " ended (the VM stopped?); the command's outcome is unknown",
                cause)));
        release();
    }

    private void deliver(StreamKind stream, List<String> fields) {
        if (fields.isEmpty()) {
            return;
        }
        byte[] data = Base64.getDecoder().decode(fields.get(0));
        if (data.length > 0) {
            gate.output(() -> listener.output(stream, data));
        }
    }

    private void finish(Runnable finalCallback) {
        gate.finish(finalCallback);
    }

    @Override
    public void writeStdin(byte[] data) {
        requireNonNull(data, "data is null");
        if (!command.stdin()) {
            throw new IllegalStateException("the command was started without standard input");
        }
        if (gate.closed() || stdinClosed.get()) {
            return;
        }
        Base64.Encoder encoder = Base64.getEncoder();
        try {
            for (int from = 0; from < data.length; from += CHUNK) {
                byte[] chunk = Arrays.copyOfRange(data, from, Math.min(data.length, from + CHUNK));
                agent.send("IN " + id + " " + encoder.encodeToString(chunk));
            }
        } catch (IOException e) {
            LOG.debug("writing to the standard input of command {} failed: {}", id, e.getMessage());
        }
    }

    @Override
    public void closeStdin() {
        if (!command.stdin() || gate.closed() || !stdinClosed.compareAndSet(false, true)) {
            return;
        }
        try {
            agent.send("EOF " + id);
        } catch (IOException e) {
            LOG.debug("closing the standard input of command {} failed: {}", id, e.getMessage());
        }
    }

    /** Ignored: the guest agent runs commands without a terminal. */
    @Override
    public void resize(TerminalSize size) {
        requireNonNull(size, "size is null");
    }

    @Override
    public void close() {
        if (!gate.close()) {
            return;
        }
        boolean ended = gate.finished();
        // A killed command's connection stays open until its EXIT frame (or the VM's end), so that closing the
        // connection cannot race with the KILL frame on its way to the guest.
        boolean killing = !ended && kill();
        finish(() -> listener.failed(new DriverException(
                DriverErrorCode.ABORTED, "the exec was closed before its command ended; the command was killed")));
        if (!killing) {
            release();
        }
    }

    /** Sends KILL; whether it was sent. */
    private boolean kill() {
        try {
            agent.send("KILL " + id);
            return true;
        } catch (IOException e) {
            LOG.debug("cannot kill command {}: {}", id, e.getMessage());
            return false;
        }
    }

    private void release() {
        if (released.compareAndSet(false, true)) {
            agent.forget(id);
            agents.release(agent);
        }
    }
}
