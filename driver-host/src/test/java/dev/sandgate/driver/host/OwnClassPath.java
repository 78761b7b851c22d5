package dev.sandgate.driver.host;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * The class path of a driver host of its own, as an operator lays it out: driver-host's classes and runtime
 * dependencies (from {@code target/host-class-path.txt}, written by the build), a directory of jars for the driver,
 * and an slf4j binding. Nothing else of the test's class path (the kit, JUnit, other drivers) is on it.
 */
final class OwnClassPath {
    private OwnClassPath() {}

    /**
     * The host's class path with a driver: the jars holding {@code driverClasses} (its provider and what it needs
     * beyond the host, such as the driver toolkit) are copied into {@code drivers/<driver>/} under {@code directory},
     * which joins the class path as {@code drivers/<driver>/*}.
     */
    static String hostWithDriver(Path directory, String driver, Class<?>... driverClasses) {
        try {
            List<String> entries = new ArrayList<>();
            entries.add(location(DriverHostMain.class).toString());
            Path runtime = Path.of("target", "host-class-path.txt");
            if (!Files.isRegularFile(runtime)) {
                throw new IllegalStateException(runtime.toAbsolutePath()
                        + " is missing: run the tests through Maven (the dependency plugin writes it)");
            }
            for (String entry : Files.readString(runtime).strip().split(File.pathSeparator, -1)) {
                if (!entry.isBlank()) {
                    entries.add(entry);
                }
            }
            Path driverJars =
                    Files.createDirectories(directory.resolve("drivers").resolve(driver));
            boolean jars = false;
            for (Class<?> driverClass : driverClasses) {
                Path driverLocation = location(driverClass);
                if (Files.isDirectory(driverLocation)) {
                    entries.add(driverLocation.toString()); // an IDE's output directory rather than the driver's jar
                } else {
                    Files.copy(
                            driverLocation,
                            driverJars.resolve(driverLocation.getFileName()),
                            StandardCopyOption.REPLACE_EXISTING);
                    jars = true;
                }
            }
            if (jars) {
                entries.add(driverJars + File.separator + "*");
            }
            entries.add(location(org.slf4j.simple.SimpleServiceProvider.class).toString());
            return String.join(File.pathSeparator, entries);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path location(Class<?> type) {
        try {
            return Path.of(
                    type.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
