package dev.sandgate.driver.podman;

import static org.awaitility.Awaitility.await;

import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.gateway.server.GatewayMain;
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
import org.awaitility.core.ConditionTimeoutException;

/**
 * The real gateway ({@link GatewayMain}) in a JVM of its own, on this test's class path (which holds the Podman
 * driver), listening on a free loopback port. A test can let it halt at a fault point and start another one over the
 * same data directory.
 */
final class GatewayProcess implements AutoCloseable {
    private static final long START_TIMEOUT_SECONDS = 120;

    private final Process process;
    private final Path log;
    private final ManagedChannel channel;

    private GatewayProcess(Process process, Path log, String address) {
        this.process = process;
        this.log = log;
        int colon = address.lastIndexOf(':');
        this.channel = NettyChannelBuilder.forAddress(
                        address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)))
                .usePlaintext()
                .build();
    }

    /** Starts a gateway with {@code arguments} and waits until it serves (its ready file appears). */
    static GatewayProcess start(Path directory, String name, List<String> arguments)
            throws IOException, InterruptedException {
        Files.createDirectories(directory);
        Path ready = directory.resolve(name + ".ready");
        Path log = directory.resolve(name + ".log");
        List<String> command = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElse("java"),
                "--enable-native-access=ALL-UNNAMED",
                "-Xmx256m",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("java.class.path"),
                GatewayMain.class.getName(),
                "--listen",
                "127.0.0.1:0",
                "--ready-file",
                ready.toString()));
        command.addAll(arguments);
        Process process = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start();
        try {
            await("the gateway's ready file, or its exit")
                    .atMost(Duration.ofSeconds(START_TIMEOUT_SECONDS))
                    .pollDelay(Duration.ZERO)
                    .pollInterval(Duration.ofMillis(25))
                    .until(() -> Files.exists(ready) || !process.isAlive());
        } catch (ConditionTimeoutException e) {
            process.destroyForcibly();
            throw new IllegalStateException("the gateway did not serve within " + START_TIMEOUT_SECONDS + " s:\n"
                    + Files.readString(log, StandardCharsets.UTF_8));
        }
        if (!Files.exists(ready)) {
            throw new IllegalStateException("the gateway exited with " + process.exitValue() + " before serving:\n"
                    + Files.readString(log, StandardCharsets.UTF_8));
        }
        return new GatewayProcess(
                process, log, Files.readString(ready, StandardCharsets.UTF_8).trim());
    }

    SandboxServiceGrpc.SandboxServiceBlockingStub stub() {
        return SandboxServiceGrpc.newBlockingStub(channel).withDeadlineAfter(120, TimeUnit.SECONDS);
    }

    /** Waits for the process to end by itself (at a fault point) and returns its exit status. */
    int awaitExit() throws InterruptedException {
        if (!process.waitFor(120, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the gateway did not exit");
        }
        channel.shutdownNow();
        return process.exitValue();
    }

    String output() throws IOException {
        return Files.readString(log, StandardCharsets.UTF_8);
    }

    /** Stops the gateway: SIGTERM, then SIGKILL after 30 s. */
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
