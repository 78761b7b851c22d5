package dev.sandgate.testing;

import dev.sandgate.api.v1.SandboxServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The gateway in a JVM of its own, listening on a free loopback port, so that a test can kill it for real (or let it
 * halt at a fault point) and start another one over the same data directory and driver backend.
 *
 * <p>The caller names the class path and the main class: which drivers the spawned gateway finds depends on that
 * class path, and each module's tests know what theirs should hold (a Podman test's holds the Podman driver, the
 * gateway's own tests hold its test drivers), so this module adds nothing to it.
 */
public final class GatewayProcess implements AutoCloseable {
    private static final long START_TIMEOUT_SECONDS = 120;
    private static final long CALL_TIMEOUT_SECONDS = 120;

    /**
     * The JVM options that {@link #start} gives every test gateway before the caller's: a small heap and the quick
     * compiler only, as a test starts many short-lived gateways on a shared machine.
     */
    public static final List<String> TEST_JVM_OPTIONS =
            List.of("--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-XX:TieredStopAtLevel=1");

    private final Process process;
    private final Path log;
    private final String address;
    private final ManagedChannel channel;

    private GatewayProcess(Process process, Path log, String address) {
        this.process = process;
        this.log = log;
        this.address = address;
        int colon = address.lastIndexOf(':');
        this.channel = NettyChannelBuilder.forAddress(
                        address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)))
                .usePlaintext()
                .build();
    }

    /**
     * Starts {@code mainClass} on {@code classPath} with {@code arguments} (plus {@code --listen 127.0.0.1:0} and a
     * ready file) and waits until it serves; its output goes to {@code <name>.log} in {@code directory}.
     */
    public static GatewayProcess start(
            Path directory, String name, String classPath, String mainClass, List<String> arguments)
            throws IOException, InterruptedException {
        return start(directory, name, classPath, mainClass, List.of(), arguments);
    }

    /**
     * As {@link #start(Path, String, String, String, List)}, with {@code jvmOptions} (e.g. system properties) after
     * {@link #TEST_JVM_OPTIONS}.
     */
    public static GatewayProcess start(
            Path directory,
            String name,
            String classPath,
            String mainClass,
            List<String> jvmOptions,
            List<String> arguments)
            throws IOException, InterruptedException {
        List<String> options = new ArrayList<>(TEST_JVM_OPTIONS);
        options.addAll(jvmOptions);
        return startWithOnly(directory, name, classPath, mainClass, options, arguments);
    }

    /**
     * As {@link #start(Path, String, String, String, List, List)}, but with {@code jvmOptions} alone: none of {@link
     * #TEST_JVM_OPTIONS}, so that a benchmark measures the gateway as it is deployed (its own heap, both compilers).
     */
    public static GatewayProcess startWithOnly(
            Path directory,
            String name,
            String classPath,
            String mainClass,
            List<String> jvmOptions,
            List<String> arguments)
            throws IOException, InterruptedException {
        Files.createDirectories(directory);
        Path ready = directory.resolve(name + ".ready");
        Files.deleteIfExists(ready);
        Path log = directory.resolve(name + ".log");
        List<String> command =
                new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java")));
        command.addAll(jvmOptions);
        command.addAll(
                List.of("-cp", classPath, mainClass, "--listen", "127.0.0.1:0", "--ready-file", ready.toString()));
        command.addAll(arguments);
        Process process = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(START_TIMEOUT_SECONDS);
        while (!Files.exists(ready)) {
            if (!process.isAlive()) {
                throw new IllegalStateException("the gateway process exited with " + process.exitValue()
                        + " before serving; its output:\n" + Files.readString(log, StandardCharsets.UTF_8));
            }
            if (System.nanoTime() > deadline) {
                process.destroyForcibly();
                throw new IllegalStateException("the gateway process did not serve within " + START_TIMEOUT_SECONDS
                        + " s; its output:\n" + Files.readString(log, StandardCharsets.UTF_8));
            }
            Thread.sleep(25);
        }
        return new GatewayProcess(
                process, log, Files.readString(ready, StandardCharsets.UTF_8).trim());
    }

    public SandboxServiceGrpc.SandboxServiceBlockingStub stub() {
        return SandboxServiceGrpc.newBlockingStub(channel).withDeadlineAfter(CALL_TIMEOUT_SECONDS, TimeUnit.SECONDS);
    }

    /** The {@code host:port} the gateway listens on. */
    public String address() {
        return address;
    }

    /** Waits for the process to end by itself (a fault point halts it) and returns its exit status. */
    public int awaitExit() throws InterruptedException {
        if (!process.waitFor(CALL_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the gateway process did not exit");
        }
        channel.shutdownNow();
        return process.exitValue();
    }

    public String output() throws IOException {
        return Files.readString(log, StandardCharsets.UTF_8);
    }

    /**
     * Kills the process at once (SIGKILL: no shutdown hook runs) and waits until it is gone. Calls in flight on {@link
     * #stub()} then fail as the connection drops, after the process died.
     */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(CALL_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the gateway process did not die");
        }
        channel.shutdownNow();
    }

    /** The process id. */
    public long pid() {
        return process.pid();
    }

    /**
     * The CPU time (user and system) the process has used so far, in nanoseconds; -1 where the JVM cannot tell (a
     * benchmark's cost per call).
     */
    public long cpuNanos() {
        return process.toHandle()
                .info()
                .totalCpuDuration()
                .map(Duration::toNanos)
                .orElse(-1L);
    }

    /** Whether the process still runs. */
    public boolean alive() {
        return process.isAlive();
    }

    /** The exit status of a process that ended; fails while it runs. */
    public int exitValue() {
        return process.exitValue();
    }

    /** The channel to the gateway, for asynchronous stubs (watches). */
    public ManagedChannel channel() {
        return channel;
    }

    /** Stops the process: SIGTERM, then SIGKILL after 30 s. */
    @Override
    public void close() {
        channel.shutdownNow();
        if (process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    process.waitFor(30, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}
