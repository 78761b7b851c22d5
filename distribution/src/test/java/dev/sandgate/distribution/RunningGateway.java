package dev.sandgate.distribution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.core.ConditionTimeoutException;

/**
 * bin/sandgate-gateway from the assembled folder, with the reference driver on a free loopback port, its output in
 * {@code gateway.log} under the given folder; started once gRPC health says SERVING.
 */
final class RunningGateway implements AutoCloseable {
    private static final Duration START_LIMIT = Duration.ofSeconds(90);

    private final Process process;
    private final Path log;
    private final String target;

    private RunningGateway(Process process, Path log, String target) {
        this.process = process;
        this.log = log;
        this.target = target;
    }

    static RunningGateway start(Path scratch) throws IOException, InterruptedException {
        return start(scratch, Map.of());
    }

    /** Starts the gateway with {@code environment} added to the launcher's (e.g. SANDGATE_LOG_FORMAT). */
    static RunningGateway start(Path scratch, Map<String, String> environment)
            throws IOException, InterruptedException {
        Path ready = scratch.resolve("ready");
        Path log = scratch.resolve("gateway.log");
        ProcessBuilder launcher = Distribution.launcher(
                "sandgate-gateway",
                List.of(
                        "--listen",
                        "127.0.0.1:0",
                        "--ready-file",
                        ready.toString(),
                        "--data-dir",
                        scratch.resolve("data").toString(),
                        "--driver",
                        "reference",
                        "--driver-property",
                        "reference.directory=" + scratch.resolve("sandboxes")));
        launcher.environment().putAll(environment);
        Process process =
                launcher.redirectErrorStream(true).redirectOutput(log.toFile()).start();
        RunningGateway gateway = new RunningGateway(process, log, awaitReadyFile(process, ready, log));
        gateway.awaitServing();
        return gateway;
    }

    /** HOST:PORT, for {@code --target}. */
    String target() {
        return target;
    }

    Process process() {
        return process;
    }

    /** What the gateway has printed so far. */
    String log() {
        return read(log);
    }

    /** Sends SIGTERM and waits for the process to end (killing it after 30 s); returns its exit status. */
    int terminate() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            throw new AssertionError("the gateway did not stop within 30 s of SIGTERM:\n" + log());
        }
        return process.exitValue();
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            terminate();
        }
    }

    /** Waits for the gateway to write HOST:PORT to its ready file; fails early if the process ends. */
    private static String awaitReadyFile(Process process, Path ready, Path log) throws IOException {
        try {
            await("the gateway's ready file, or its exit")
                    .atMost(START_LIMIT)
                    .pollDelay(Duration.ZERO)
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> Files.exists(ready) || !process.isAlive());
        } catch (ConditionTimeoutException e) {
            throw new AssertionError(
                    "the gateway wrote no ready file within " + START_LIMIT.toSeconds() + " s:\n" + read(log));
        }
        if (!Files.exists(ready)) {
            throw new AssertionError("the gateway exited with status " + process.exitValue() + ":\n" + read(log));
        }
        return Files.readString(ready, StandardCharsets.UTF_8).trim();
    }

    /** Polls grpc.health.v1 until the gateway reports SERVING. */
    private void awaitServing() throws InterruptedException {
        int colon = target.lastIndexOf(':');
        ManagedChannel channel = NettyChannelBuilder.forAddress(
                        target.substring(0, colon), Integer.parseInt(target.substring(colon + 1)))
                .usePlaintext()
                .build();
        try {
            HealthGrpc.HealthBlockingStub health = HealthGrpc.newBlockingStub(channel);
            var status = new AtomicReference<>(ServingStatus.UNKNOWN);
            try {
                await("the gateway SERVING, or its exit")
                        .atMost(START_LIMIT)
                        .pollDelay(Duration.ZERO)
                        .pollInterval(Duration.ofMillis(100))
                        .until(() -> {
                            status.set(status(health));
                            return status.get() == ServingStatus.SERVING || !process.isAlive();
                        });
            } catch (ConditionTimeoutException e) {
                // The assertion below names the last status.
            }
            if (status.get() != ServingStatus.SERVING && !process.isAlive()) {
                throw new AssertionError("the gateway exited with status " + process.exitValue() + ":\n" + log());
            }
            assertThat(status.get()).as("health of the gateway at %s", target).isEqualTo(ServingStatus.SERVING);
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    private static ServingStatus status(HealthGrpc.HealthBlockingStub health) {
        try {
            return health.withDeadlineAfter(5, TimeUnit.SECONDS)
                    .check(HealthCheckRequest.getDefaultInstance())
                    .getStatus();
        } catch (StatusRuntimeException e) {
            return ServingStatus.UNKNOWN;
        }
    }

    private static String read(Path log) {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
