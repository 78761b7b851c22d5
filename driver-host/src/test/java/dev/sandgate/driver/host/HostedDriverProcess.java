package dev.sandgate.driver.host;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.remote.RemoteSettings;
import dev.sandgate.spi.DriverConfig;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A driver host running as a separate JVM, serving on a Unix socket, for the tests: started with this test JVM's
 * class path, stopped (or killed) by the test.
 */
public final class HostedDriverProcess implements AutoCloseable {
    private static final long START_TIMEOUT_SECONDS = 60;

    private final List<String> command;
    private final Path socket;
    private final Path log;
    private Process process;

    private HostedDriverProcess(List<String> command, Path socket, Path log) {
        this.command = command;
        this.socket = socket;
        this.log = log;
    }

    /**
     * A host for {@code hostArguments} ({@code --driver NAME} or {@code --provider-class CLASS}) with {@code settings},
     * listening on {@code socket}; its output goes to {@code log}. Not started yet.
     */
    public static HostedDriverProcess of(
            List<String> hostArguments, Map<String, String> settings, Path socket, Path log) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("--enable-native-access=ALL-UNNAMED");
        if (Runtime.version().feature() >= 23) {
            command.add("--sun-misc-unsafe-memory-access=allow");
        }
        command.add("-Xshare:auto");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(DriverHostMain.class.getName());
        command.addAll(hostArguments);
        command.add("--listen");
        command.add("unix://" + socket.toAbsolutePath());
        settings.forEach((key, value) -> {
            command.add("--set");
            command.add(key + "=" + value);
        });
        return new HostedDriverProcess(List.copyOf(command), socket, log);
    }

    /**
     * A driver process of any language: {@code command} must serve {@code sandgate.driver.v1} on {@code socket} and
     * print a line starting with {@code sandgate-driver-host: serving} once it does.
     */
    public static HostedDriverProcess command(List<String> command, Path socket, Path log) {
        return new HostedDriverProcess(List.copyOf(command), socket, log);
    }

    /** Starts the process and waits until it serves. */
    public HostedDriverProcess start() {
        try {
            process = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.PIPE)
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        var serving = new CompletableFuture<Void>();
        Process started = process;
        Thread.ofPlatform().daemon(true).name("driver-host-output").start(() -> {
            try (var reader = new BufferedReader(
                            new InputStreamReader(started.getInputStream(), StandardCharsets.UTF_8));
                    var out = java.nio.file.Files.newBufferedWriter(
                            log,
                            StandardCharsets.UTF_8,
                            java.nio.file.StandardOpenOption.CREATE,
                            java.nio.file.StandardOpenOption.APPEND)) {
                String line;
                while ((line = reader.readLine()) != null) {
                    out.write(line);
                    out.newLine();
                    out.flush();
                    if (line.startsWith("sandgate-driver-host: serving")) {
                        serving.complete(null);
                    }
                }
            } catch (IOException e) {
                serving.completeExceptionally(e);
            }
            serving.completeExceptionally(new IllegalStateException("the driver host exited; see " + log));
        });
        try {
            serving.get(START_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            process.destroyForcibly();
            throw new IllegalStateException(
                    "the driver host did not serve within " + START_TIMEOUT_SECONDS + " s; see " + log, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        return this;
    }

    /** The remote driver's settings for this host. */
    public DriverConfig remoteConfig() {
        return DriverConfig.EMPTY.with(RemoteSettings.TARGET, "unix://" + socket.toAbsolutePath());
    }

    /** Kills the process at once (SIGKILL), as a crash would. */
    public void kill() {
        process.destroyForcibly();
        waitFor();
    }

    public boolean isAlive() {
        return process != null && process.isAlive();
    }

    /** Stops the process (SIGTERM, then SIGKILL after 10 s). */
    @Override
    public void close() {
        if (process == null) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        waitFor();
    }

    private void waitFor() {
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    Path socket() {
        return requireNonNull(socket);
    }
}
