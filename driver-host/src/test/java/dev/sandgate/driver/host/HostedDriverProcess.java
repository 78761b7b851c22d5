package dev.sandgate.driver.host;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.remote.RemoteSettings;
import dev.sandgate.spi.DriverSettings;
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
 * A driver host running as a separate JVM for the tests, serving on a Unix socket (with this test JVM's class path) or
 * on TCP with mutual TLS (with a class path of its own); started with this test JVM's java, stopped (or killed) by the
 * test.
 */
public final class HostedDriverProcess implements AutoCloseable {
    private static final long START_TIMEOUT_SECONDS = 60;
    private static final String SERVING = "sandgate-driver-host: serving ";

    private final List<String> command;
    private final Path socket;
    private final Path log;
    private Process process;
    private volatile String servedAddress;

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
        List<String> listen = List.of("--listen", "unix://" + socket.toAbsolutePath());
        return new HostedDriverProcess(
                command(System.getProperty("java.class.path"), hostArguments, listen, settings), socket, log);
    }

    /**
     * A host with the class path {@code classPath} (not this JVM's) for {@code hostArguments} with {@code settings},
     * listening on {@code tcp} with mutual TLS (port 0: a free port, see {@link #remoteConfig()}); its output goes to
     * {@code log}. Not started yet.
     */
    public static HostedDriverProcess overMutualTls(
            String classPath,
            List<String> hostArguments,
            Map<String, String> settings,
            DriverHost.Listen.Tcp tcp,
            Path log) {
        List<String> listen = List.of(
                "--listen",
                tcp.host() + ":" + tcp.port(),
                "--tls-certificate",
                tcp.certificate().toString(),
                "--tls-key",
                tcp.key().toString(),
                "--tls-trust",
                tcp.trust().toString());
        return new HostedDriverProcess(command(classPath, hostArguments, listen, settings), null, log);
    }

    private static List<String> command(
            String classPath, List<String> hostArguments, List<String> listen, Map<String, String> settings) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("--enable-native-access=ALL-UNNAMED");
        if (Runtime.version().feature() >= 23) {
            command.add("--sun-misc-unsafe-memory-access=allow");
        }
        command.add("-Xshare:auto");
        command.add("-cp");
        command.add(classPath);
        command.add(DriverHostMain.class.getName());
        command.addAll(hostArguments);
        command.addAll(listen);
        settings.forEach((key, value) -> {
            command.add("--set");
            command.add(key + "=" + value);
        });
        return List.copyOf(command);
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
                    if (line.startsWith(SERVING)) {
                        int on = line.lastIndexOf(" on ");
                        servedAddress = on < 0 ? null : line.substring(on + " on ".length());
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

    /** The remote driver's target setting for this host (a TCP host also needs the {@code remote.tls.*} files). */
    public DriverSettings remoteConfig() {
        String target = socket != null ? "unix://" + socket.toAbsolutePath() : requireNonNull(servedAddress);
        return DriverSettings.EMPTY.with(RemoteSettings.TARGET, target);
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
