package dev.sandgate.distribution;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.testing.ProcessTest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The assembled folder and archive have the documented layout. */
@ProcessTest
class DistributionLayoutTest {
    private static final Path HOME = Distribution.home();

    @Test
    void launchersAreExecutable() {
        assertThat(HOME.resolve("bin/sandgate-gateway")).isExecutable();
        assertThat(HOME.resolve("bin/sandgate")).isExecutable();
    }

    @Test
    void libHoldsTheGatewayAndTheCliButNoDriver() throws IOException {
        Set<String> lib = jarNames(HOME.resolve("lib"));

        assertThat(lib)
                .anyMatch(name -> name.startsWith("sandgate-gateway-server-"))
                .anyMatch(name -> name.startsWith("sandgate-cli-"))
                .anyMatch(name -> name.startsWith("sandgate-driver-spi-"))
                .noneMatch(name -> name.startsWith("sandgate-driver-") && !name.startsWith("sandgate-driver-spi-"));
    }

    @Test
    void eachDriverHasItsOwnFolderWithItsJar() throws IOException {
        try (Stream<Path> folders = Files.list(HOME.resolve("drivers"))) {
            List<Path> drivers = folders.toList();
            assertThat(drivers).isNotEmpty();
            for (Path folder : drivers) {
                assertThat(jarNames(folder))
                        .as("drivers/%s", folder.getFileName())
                        .anyMatch(name -> name.startsWith("sandgate-driver-" + folder.getFileName() + "-"));
            }
        }
    }

    @Test
    void everyFirstPartyDriverIsAssembled() throws IOException {
        try (Stream<Path> folders = Files.list(HOME.resolve("drivers"))) {
            assertThat(folders.map(folder -> folder.getFileName().toString()))
                    .contains(Distribution.DRIVERS.toArray(String[]::new));
        }
    }

    @Test
    void driverFoldersHoldNothingThatLibHolds() throws IOException {
        Set<String> lib = jarNames(HOME.resolve("lib"));
        try (Stream<Path> folders = Files.list(HOME.resolve("drivers"))) {
            for (Path folder : folders.toList()) {
                assertThat(jarNames(folder))
                        .as("drivers/%s", folder.getFileName())
                        .doesNotContainAnyElementsOf(lib);
            }
        }
    }

    @Test
    void everyDriverFolderHoldsWithLibTheDriversWholeDependencyTree() throws IOException {
        DependencyTree tree = DependencyTree.read(Path.of(System.getProperty("sandgate.dependencyTree")));
        Set<String> lib = jarNames(HOME.resolve("lib"));
        for (String driver : Distribution.DRIVERS) {
            Set<String> folder = jarNames(HOME.resolve("drivers").resolve(driver));
            List<String> missing = tree.closure("dev.sandgate:sandgate-driver-" + driver).stream()
                    .filter(jar -> !holds(lib, jar) && !holds(folder, jar))
                    .map(DependencyTree.Jar::fileName)
                    .toList();
            assertThat(missing)
                    .as(
                            "jars that drivers/%s needs but neither it nor lib/ holds: add what pulls them in to the"
                                    + " driver's <includes> in src/assembly/folder.xml",
                            driver)
                    .isEmpty();
        }
    }

    @Test
    void confHoldsTheExampleConfigurationAndLogging() {
        assertThat(HOME.resolve("conf/gateway.properties")).content().contains("#listen=127.0.0.1:7443");
        assertThat(HOME.resolve("conf/logback.xml")).isRegularFile();
    }

    @Test
    void archiveHoldsTheSameTreeUnderAVersionedFolder(@TempDir Path scratch) throws Exception {
        Path archive;
        try (Stream<Path> files = Files.list(HOME.getParent())) {
            archive = files.filter(file -> file.getFileName().toString().matches("sandgate-.+\\.tar\\.gz"))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("no sandgate-VERSION.tar.gz next to " + HOME));
        }
        Process tar = new ProcessBuilder("tar", "-xzf", archive.toString(), "-C", scratch.toString())
                .inheritIO()
                .start();
        assertThat(tar.waitFor()).isZero();

        Path unpacked;
        try (Stream<Path> top = Files.list(scratch)) {
            unpacked = top.collect(Collectors.toList()).getFirst();
        }
        String version =
                archive.getFileName().toString().replaceFirst("^sandgate-", "").replaceFirst("\\.tar\\.gz$", "");
        assertThat(unpacked.getFileName()).hasToString("sandgate-" + version);
        assertThat(unpacked.resolve("bin/sandgate-gateway")).isExecutable();
        assertThat(jarNames(unpacked.resolve("lib"))).isEqualTo(jarNames(HOME.resolve("lib")));
    }

    /**
     * Whether {@code jarNames} has {@code jar} at some version: the verbose tree that Maven prints may name another
     * version of a jar than its build resolved (its own resolution breaks ties differently), never another jar.
     */
    private static boolean holds(Set<String> jarNames, DependencyTree.Jar jar) {
        String suffix = (jar.classifier() == null ? "" : "-" + jar.classifier()) + ".jar";
        return jarNames.stream()
                .anyMatch(name -> name.startsWith(jar.artifact() + "-")
                        && name.endsWith(suffix)
                        && Character.isDigit(name.charAt(jar.artifact().length() + 1)));
    }

    private static Set<String> jarNames(Path folder) throws IOException {
        try (Stream<Path> files = Files.list(folder)) {
            return files.map(file -> file.getFileName().toString())
                    .filter(name -> name.endsWith(".jar"))
                    .collect(Collectors.toSet());
        }
    }
}
