package dev.sandgate.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.gateway.testing.TestGateway;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The data directory holds every sandbox's spec, environment values included: its store is owner-only. */
@Tag("sqlite-only") // Not on PostgreSQL: the SQLite files in the data directory.
class DataDirectoryTest {
    @TempDir
    Path root;

    @Test
    void theStoreIsOwnerOnlyInADataDirectoryTheOperatorCreatedOpenToOthers() throws Exception {
        Path data = Files.createDirectory(
                root.resolve("data"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwxr-xr-x"));

        try (TestGateway gateway = TestGateway.start(root, TestGateway.Transport.IN_PROCESS)) {
            gateway.create("team", "secret-env");

            for (String name : new String[] {"sandgate.db", "sandgate.db-wal", "sandgate.db-shm", "gateway.lock"}) {
                assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(data.resolve(name))))
                        .as(name)
                        .isEqualTo("rw-------");
            }
        }
    }

    @Test
    void storeFilesLeftReadableByOthersAreMadeOwnerOnlyAtStart() throws Exception {
        try (TestGateway gateway = TestGateway.start(root, TestGateway.Transport.IN_PROCESS)) {
            gateway.create("team", "first");
        }
        Path database = root.resolve("data").resolve("sandgate.db");
        Files.setPosixFilePermissions(database, PosixFilePermissions.fromString("rw-r--r--"));

        try (TestGateway gateway = TestGateway.start(root, TestGateway.Transport.IN_PROCESS)) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(database)))
                    .isEqualTo("rw-------");
        }
    }
}
