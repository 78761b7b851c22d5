package dev.sandgate.driver.reference;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * The reference driver's {@link java.util.ServiceLoader} entry, named {@value #NAME}. It runs no workload (executions
 * are simulated) and exists to define the contract in code: the conformance kit's own tests run against it, and the
 * gateway's tests use it as a backend that survives process restarts.
 *
 * <p>Settings:
 *
 * <ul>
 *   <li>{@value #DIRECTORY}: the backend directory, shared by every process that uses it. Without it, each JVM uses
 *       a temporary directory of its own, removed when the JVM exits (a fallback for quick experiments only).
 *   <li>{@value #ENFORCEABLE_FIELDS}: the policy fields the driver claims to enforce, a comma list of {@link
 *       dev.sandgate.spi.PolicyField} names or {@code none}; default every field but {@code NETWORK_ALLOW_LIST}.
 *   <li>{@value #LAUNCH_POLICY_ON_START}: whether a start may launch with another policy than the previous
 *       execution had; default {@code true}.
 *   <li>{@value #WATCH_INTERVAL}: how often a watch polls the directory; default {@code 50ms}.
 *   <li>{@value #EXEC}, {@value #LOGS}: whether the driver claims exec and logs, both simulated (no host process
 *       runs); default {@code true}.
 * </ul>
 */
public final class ReferenceDriverProvider implements ComputeDriverProvider {
    public static final String NAME = "reference";
    public static final String DIRECTORY = ReferenceSettings.DIRECTORY;
    public static final String ENFORCEABLE_FIELDS = ReferenceSettings.ENFORCEABLE_FIELDS;
    public static final String LAUNCH_POLICY_ON_START = ReferenceSettings.LAUNCH_POLICY_ON_START;
    public static final String WATCH_INTERVAL = ReferenceSettings.WATCH_INTERVAL;
    public static final String EXEC = ReferenceSettings.EXEC;
    public static final String LOGS = ReferenceSettings.LOGS;

    /** 0: the gateway uses the reference driver only when it is named (it runs nothing), never by itself. */
    public static final int PRIORITY = 0;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int priority() {
        return PRIORITY;
    }

    @Override
    public Availability availability(DriverSettings config) {
        requireNonNull(config, "config is null");
        ReferenceSettings settings;
        try {
            settings = ReferenceSettings.from(config);
        } catch (DriverException e) {
            return Availability.unavailable(e.getMessage());
        }
        if (settings.directory().isEmpty()) {
            return Availability.available("a process-local temporary directory (" + DIRECTORY + " is not set)");
        }
        Path directory = settings.directory().get();
        Path existing = directory.toAbsolutePath();
        while (existing != null && !Files.exists(existing)) {
            existing = existing.getParent();
        }
        if (existing == null || !Files.isDirectory(existing) || !Files.isWritable(existing)) {
            return Availability.unavailable(DIRECTORY + ": " + directory + " is not a writable directory");
        }
        return Availability.available("directory " + directory);
    }

    @Override
    public ComputeDriver create(DriverSettings config, DriverContext context) {
        requireNonNull(config, "config is null");
        requireNonNull(context, "context is null");
        ReferenceSettings settings = ReferenceSettings.from(config);
        Path directory = settings.directory().orElseGet(ProcessLocalDirectory::get);
        DirectoryBackend backend;
        try {
            backend = new DirectoryBackend(directory);
            backend.sweep(context.gatewayId());
        } catch (UncheckedIOException e) {
            throw new DriverException(
                    DriverErrorCode.UNAVAILABLE, DIRECTORY + ": cannot use " + directory + ": " + e.getMessage(), e);
        }
        return new ReferenceDriver(backend, settings, context);
    }

    /** The fallback backend: one temporary directory per JVM, removed when the JVM exits. */
    private static final class ProcessLocalDirectory {
        private static final Path DIRECTORY = create();

        static Path get() {
            return DIRECTORY;
        }

        private static Path create() {
            try {
                Path directory = Files.createTempDirectory("sandgate-reference-");
                Runtime.getRuntime()
                        .addShutdownHook(Thread.ofPlatform()
                                .name("sandgate-reference-cleanup")
                                .unstarted(() -> deleteTree(directory)));
                return directory;
            } catch (IOException e) {
                throw new DriverException(
                        DriverErrorCode.UNAVAILABLE, "cannot create a temporary directory: " + e.getMessage(), e);
            }
        }

        private static void deleteTree(Path tree) {
            try (Stream<Path> paths = Files.walk(tree)) {
                paths.sorted(Comparator.reverseOrder())
                        .forEach(path -> path.toFile().delete());
            } catch (IOException | UncheckedIOException e) {
                // the JVM is exiting; the temporary directory's owner can remove what is left
            }
        }
    }
}
