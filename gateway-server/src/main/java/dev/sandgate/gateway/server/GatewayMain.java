package dev.sandgate.gateway.server;

import dev.sandgate.gateway.security.GatewaySecurity;
import dev.sandgate.gateway.store.StoreException;
import dev.sandgate.gateway.token.TokenKeys;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

/**
 * The gateway's command-line entry point. {@code --help} prints every option ({@link GatewaySettings#usage()}),
 * {@code --version} the version.
 *
 * <p>Exit status: after a clean shutdown on SIGTERM/SIGINT, the JVM's signal status (143/130; the shutdown hook
 * drains and closes everything first); 2 for a configuration error; 1 for a failure at start; 86 when an armed test
 * fault point halted the process.
 */
public final class GatewayMain {
    private static final Logger log = LoggerFactory.getLogger(GatewayMain.class);

    private GatewayMain() {}

    public static void main(String[] args) {
        // java.util.logging (gRPC, the JDK's HTTP client) into slf4j: conf/logback.xml sets its levels.
        SLF4JBridgeHandler.removeHandlersForRootLogger();
        SLF4JBridgeHandler.install();
        int status = run(args, System.out, System.err);
        if (status != 0) {
            // Failed before serving: no shutdown hook of ours will stop the logging, so write what it buffers now
            // (the reason of the failure among it).
            LoggingShutdown.flushAndStop();
        }
        System.exit(status);
    }

    /** How the gateway's own messages begin. */
    static final String PROGRAM = "sandgate-gateway: ";

    static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, System.getenv(), out, err);
    }

    static int run(String[] args, Map<String, String> environment, PrintStream out, PrintStream err) {
        if (Arrays.asList(args).contains("--version")) {
            out.println("sandgate-gateway " + version());
            return 0;
        }
        GatewaySettings config;
        try {
            config = GatewaySettings.load(args, environment);
        } catch (ConfigException e) {
            err.println(PROGRAM + e.getMessage());
            return 2;
        }
        List<String> unknown = GatewaySettings.unknownEnvironment(environment);
        if (!unknown.isEmpty()) {
            err.println(PROGRAM + "warning: ignoring " + String.join(", ", unknown)
                    + ": no gateway setting has this name (see --help; a driver setting is"
                    + " SANDGATE_DRIVER_PROPERTY_<KEY>)");
        }
        if (config.help()) {
            out.print(GatewaySettings.usage());
            return 0;
        }
        if (config.rotateTokenKey()) {
            TokenKeys keys = TokenKeys.rotate(config.tokenKeyFile());
            out.println("rotated " + config.tokenKeyFile() + ": current key "
                    + keys.current().id()
                    + ", previous key " + keys.previous().map(TokenKeys.Key::id).orElse("(none)")
                    + "; restart the gateway to sign with the new key");
            if (gatewayRunsOn(config.dataDir())) {
                out.println("warning: a gateway is running on " + config.dataDir()
                        + " and still signs with the key before this one: restart it before rotating again, or"
                        + " the tokens it handed out stop verifying");
            }
            return 0;
        }
        // Before the store is opened and recovered: a busy port is the commonest reason a start fails.
        Optional<String> busy = ListenProbe.problem(config.listenHost(), config.listenPort());
        if (busy.isPresent()) {
            err.println(PROGRAM + "cannot listen on " + config.listen() + ": " + busy.get());
            return 1;
        }
        Gateway gateway;
        GatewayServer server;
        try {
            gateway = Gateway.open(config);
        } catch (ConfigException e) {
            err.println(PROGRAM + e.getMessage());
            return 2;
        } catch (UncheckedIOException | StoreException e) {
            // The data directory or the store: the message says which and why; a stack trace would add nothing.
            String why = e.getMessage()
                    + (e.getCause() != null && e instanceof StoreException
                            ? ": " + ListenProbe.rootMessage(e.getCause())
                            : "");
            log.error("the gateway could not start: {}", why);
            err.println(PROGRAM + "the gateway could not start: " + why);
            return 1;
        } catch (RuntimeException e) {
            log.error("the gateway could not start", e);
            err.println(PROGRAM + "the gateway could not start: " + e.getMessage());
            return 1;
        }
        // Security (issue 28): transport credentials and the authenticating, authorizing, auditing interceptor.
        GatewaySecurity security;
        try {
            security = GatewaySecurity.open(config.security(), gateway.lifecycle(), Clock.systemUTC());
        } catch (ConfigException e) {
            gateway.close();
            err.println(PROGRAM + e.getMessage());
            return 2;
        }
        try {
            server = GatewayServer.start(
                    gateway,
                    NettyServerBuilder.forAddress(
                            new InetSocketAddress(config.listenHost(), config.listenPort()), security.credentials()),
                    List.of(security.interceptor()));
        } catch (RuntimeException e) {
            security.close();
            gateway.close();
            err.println(PROGRAM + "cannot listen on " + config.listen() + ": " + ListenProbe.rootMessage(e));
            return 1;
        }
        String address = config.listenHost() + ":" + server.port();
        log.info(
                "serving sandgate.v1.SandboxService on {} (driver {}, {}{})",
                address,
                gateway.lifecycle().driverName(),
                config.security().tls() ? "TLS" : "plaintext",
                config.security().authenticates() ? ", authenticated" : "");
        GatewaySecurity.warnIfExposed(config.security(), config.listenHost(), address);
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            stop(server, gateway, address, config.readyFile());
                            security.close();
                        },
                        "sandgate-shutdown"));
        if (config.readyFile().isPresent()) {
            try {
                writeAtomically(config.readyFile().get(), address + "\n");
            } catch (IOException e) {
                err.println(PROGRAM + "cannot write the ready file: " + IoReasons.describe(e));
                return 1;
            }
        }
        try {
            server.awaitTermination();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }

    /**
     * The shutdown hook: stops the server ({@link GatewayServer#close()}: no new calls, watches ended, the calls in
     * flight drained), closes the gateway, says so, and only then stops the logging backend, so that these last lines
     * reach the output (a logging shutdown hook of its own would run alongside this one and could drop them).
     */
    private static void stop(GatewayServer server, Gateway gateway, String address, Optional<Path> readyFile) {
        long began = System.nanoTime();
        log.info("signal received: stopping the gateway on {}", address);
        try {
            server.close();
            gateway.close();
            // It says "serving at ADDRESS": no longer true.
            if (readyFile.isPresent()) {
                Files.deleteIfExists(readyFile.get());
            }
            log.info("stopped in {} ms", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began));
        } catch (IOException | RuntimeException e) {
            log.error("stopping failed", e);
        } finally {
            LoggingShutdown.flushAndStop();
        }
    }

    /** Whether a gateway holds the data directory's lock (one of this process counts too). */
    private static boolean gatewayRunsOn(Path dataDir) {
        Path lockFile = dataDir.resolve(Gateway.LOCK_FILE);
        if (!Files.exists(lockFile)) {
            return false;
        }
        try (FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.WRITE)) {
            FileLock lock = channel.tryLock();
            if (lock == null) {
                return true;
            }
            lock.release();
            return false;
        } catch (OverlappingFileLockException e) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The version in the jar's manifest, or a note when running from classes (a development build). */
    static String version() {
        String version = GatewayMain.class.getPackage().getImplementationVersion();
        return version != null ? version : "(development build: no jar manifest)";
    }

    private static void writeAtomically(Path file, String text) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        Files.createDirectories(parent);
        Path temp = Files.createTempFile(parent, ".ready", ".tmp");
        Files.writeString(temp, text, StandardCharsets.UTF_8);
        Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
}
