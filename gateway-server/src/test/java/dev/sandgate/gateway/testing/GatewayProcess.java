package dev.sandgate.gateway.testing;

import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.gateway.server.GatewayMain;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The gateway as a separate JVM ({@link GatewayMain} on the test class path), so that a test can kill it for real and
 * start it again over the same data directory and driver backend.
 */
public final class GatewayProcess implements AutoCloseable {
    private static final long START_TIMEOUT_SECONDS = 120;

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
     * Starts a gateway process with {@code args} (plus {@code --listen 127.0.0.1:0} and a ready file) and waits until
     * it serves.
     */
    public static GatewayProcess start(Path workDir, String logName, List<String> args)
            throws IOException, InterruptedException {
        Files.createDirectories(workDir);
        Path ready = workDir.resolve(logName + ".ready");
        Files.deleteIfExists(ready);
        Path log = workDir.resolve(logName + ".log");
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse("java"));
        command.add("--enable-native-access=ALL-UNNAMED");
        command.add("-Xmx256m");
        command.add("-XX:TieredStopAtLevel=1");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(GatewayMain.class.getName());
        command.add("--listen");
        command.add("127.0.0.1:0");
        command.add("--ready-file");
        command.add(ready.toString());
        command.addAll(args);
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
        return SandboxServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    public String address() {
        return address;
    }

    /** Waits for the process to end by itself (a fault point halts it) and returns its exit status. */
    public int awaitExit() throws InterruptedException {
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the gateway process did not exit");
        }
        channel.shutdownNow();
        return process.exitValue();
    }

    public String output() throws IOException {
        return Files.readString(log, StandardCharsets.UTF_8);
    }

    /** Stops the process (SIGTERM, then SIGKILL after 30 s). */
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
