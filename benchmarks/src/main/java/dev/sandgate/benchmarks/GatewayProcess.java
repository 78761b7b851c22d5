package dev.sandgate.benchmarks;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A gateway in a JVM of its own, started as {@code bin/sandgate-gateway} starts it ({@code GatewayMain} with the
 * command line's options) on this JVM's class path, on a free loopback port that it writes to its ready file. Its
 * output and log go to files in its data directory.
 */
final class GatewayProcess implements AutoCloseable {
    private static final Duration READY_WITHIN = Duration.ofMinutes(2);

    private final Process process;
    private final int port;

    private GatewayProcess(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    /**
     * Starts {@code GatewayMain} with {@code options} (after {@code --listen} and {@code --ready-file}, which this
     * class sets) under {@code jvmOptions}, and waits until it serves.
     *
     * @param dataDirectory the gateway's data directory (created); its output goes to {@code gateway.out} beside it
     */
    static GatewayProcess start(Path dataDirectory, List<String> jvmOptions, List<String> options)
            throws IOException, InterruptedException {
        Files.createDirectories(dataDirectory);
        Path ready = dataDirectory.resolveSibling(dataDirectory.getFileName() + ".ready");
        Files.deleteIfExists(ready);
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        command.add("-Dlogback.configurationFile=sandgate-bench-logback.xml");
        command.add("-Dsandgate.bench.log=" + dataDirectory.resolveSibling(dataDirectory.getFileName() + ".log"));
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add("dev.sandgate.gateway.server.GatewayMain");
        command.addAll(List.of("--listen", "127.0.0.1:0", "--ready-file", ready.toString()));
        command.addAll(List.of("--data-dir", dataDirectory.toString()));
        command.addAll(options);
        Path output = dataDirectory.resolveSibling(dataDirectory.getFileName() + ".out");
        Process process = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(output.toFile())
                .start();
        long deadline = System.nanoTime() + READY_WITHIN.toNanos();
        while (!Files.exists(ready)) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                throw new IllegalStateException("the gateway did not start (exit status "
                        + (process.isAlive() ? "none" : process.exitValue()) + "): "
                        + tail(output));
            }
            Thread.sleep(20);
        }
        String address = Files.readString(ready, StandardCharsets.UTF_8).strip();
        int port = Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
        return new GatewayProcess(process, port);
    }

    int port() {
        return port;
    }

    /** The CPU time (user and system) the process has used so far, in nanoseconds; -1 where the JVM cannot tell. */
    long cpuNanos() {
        return process.toHandle()
                .info()
                .totalCpuDuration()
                .map(Duration::toNanos)
                .orElse(-1L);
    }

    /** Stops it as an operator would (SIGTERM: it drains and exits), forcibly after 30 s. */
    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static String tail(Path output) {
        requireNonNull(output, "output is null");
        try {
            List<String> lines = Files.readAllLines(output, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no output: " + e.getMessage() + ")";
        }
    }
}
