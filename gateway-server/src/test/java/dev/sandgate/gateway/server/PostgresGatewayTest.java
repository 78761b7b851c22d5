package dev.sandgate.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.FakeDriverProvider;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.testing.EngineTest;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Gateways on a real PostgreSQL store (scripts/engines/postgres.sh). Skipped without one, unless engines are required
 * (CI), where it fails. Each test starts from an empty database, which the first gateway migrates.
 */
@EngineTest
class PostgresGatewayTest {
    @TempDir
    Path dir;

    private String url;
    private String user;
    private String passwordFile;

    @BeforeEach
    void emptyDatabase() throws Exception {
        url = System.getenv("SANDGATE_POSTGRES_URL");
        user = System.getenv("SANDGATE_POSTGRES_USER");
        passwordFile = System.getenv("SANDGATE_POSTGRES_PASSWORD_FILE");
        if (url == null || user == null || passwordFile == null) {
            assertThat(Boolean.getBoolean("sandgate.requireEngines"))
                    .as("SANDGATE_POSTGRES_URL, _USER and _PASSWORD_FILE are set (scripts/engines/postgres.sh)")
                    .isFalse();
            Assumptions.abort("no PostgreSQL: run scripts/test, which starts one (scripts/engines/postgres.sh)");
        }
        String password =
                Files.readString(Path.of(passwordFile), StandardCharsets.UTF_8).strip();
        try (Connection connection = DriverManager.getConnection(url, user, password);
                Statement statement = connection.createStatement()) {
            statement.execute(
                    "DROP TABLE IF EXISTS sandbox_label, policy_revision, request, sandbox, gateway_meta, replica_lease,"
                            + " sandbox_change, sandbox_change_pruned,"
                            + " flyway_schema_history CASCADE");
        }
    }

    private List<String> storeArgs() {
        return List.of("--store-url", url, "--store-user", user, "--store-password-file", passwordFile);
    }

    @Test
    @DisplayName("a gateway keeps its sandboxes in PostgreSQL; a second one on the database is a replica serving them")
    void secondGatewayIsAReplica() {
        try (TestGateway first = TestGateway.start(
                dir.resolve("first"),
                TestGateway.Transport.IN_PROCESS,
                FakeDriver.allCapabilities(),
                storeArgs().toArray(String[]::new))) {
            String id = first.create("team", "kept").getId();
            first.restart();
            assertThat(first.stub()
                            .getSandbox(GetSandboxRequest.newBuilder()
                                    .setTarget(TestGateway.byName("team", "kept"))
                                    .build())
                            .getSandbox()
                            .getId())
                    .as("kept across a restart")
                    .isEqualTo(id);

            try (TestGateway second = TestGateway.start(
                    dir.resolve("second"),
                    TestGateway.Transport.IN_PROCESS,
                    FakeDriver.allCapabilities(),
                    storeArgs().toArray(String[]::new))) {
                assertThat(second.stub()
                                .getSandbox(GetSandboxRequest.newBuilder()
                                        .setTarget(TestGateway.byName("team", "kept"))
                                        .build())
                                .getSandbox()
                                .getId())
                        .as("the second replica reads what the first wrote")
                        .isEqualTo(id);
                String other = second.create("team", "second").getId();
                assertThat(first.stub()
                                .getSandbox(GetSandboxRequest.newBuilder()
                                        .setTarget(TestGateway.byName("team", "second"))
                                        .build())
                                .getSandbox()
                                .getId())
                        .as("and the first what the second wrote")
                        .isEqualTo(other);
            }
        }
    }

    @Test
    @DisplayName("a wrong password: the gateway exits naming the store settings, the password in no message")
    void wrongPassword() throws Exception {
        Path file = dir.resolve("wrong-password");
        Files.writeString(file, "not-the-password-42\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        ByteArrayOutputStream err = new ByteArrayOutputStream();

        int status = GatewayMain.run(
                new String[] {
                    "--listen",
                    "127.0.0.1:0",
                    "--data-dir",
                    dir.resolve("data").toString(),
                    "--driver",
                    "fake",
                    "--driver-property",
                    FakeDriverProvider.DIRECTORY + "=" + dir.resolve("backend"),
                    "--store-url",
                    url,
                    "--store-user",
                    user,
                    "--store-password-file",
                    file.toString()
                },
                Map.of(),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));

        assertThat(status).isEqualTo(1);
        assertThat(err.toString(StandardCharsets.UTF_8))
                .contains("cannot open the PostgreSQL store at " + url + " as " + user)
                .contains("store-password-file")
                .contains("password authentication failed")
                .doesNotContain("not-the-password-42");
    }

    @Test
    @DisplayName("a password file others may read is made owner-only; a missing one is refused naming the option")
    void passwordFileOwnerOnly() throws Exception {
        Path file = dir.resolve("password");
        Files.copy(Path.of(passwordFile), file);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        try (TestGateway gateway = TestGateway.start(
                dir.resolve("gw"),
                TestGateway.Transport.IN_PROCESS,
                FakeDriver.allCapabilities(),
                "--store-url",
                url,
                "--store-user",
                user,
                "--store-password-file",
                file.toString())) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
                    .isEqualTo("rw-------");
        }

        GatewaySettings missing = GatewaySettings.load(
                new String[] {
                    "--data-dir",
                    dir.resolve("other").toString(),
                    "--store-url",
                    url,
                    "--store-user",
                    user,
                    "--store-password-file",
                    dir.resolve("absent").toString()
                },
                Map.of());
        org.assertj.core.api.Assertions.assertThatThrownBy(
                        () -> Gateway.open(missing, java.time.Clock.systemUTC(), (id, clock) -> {
                            throw new AssertionError("not reached");
                        }))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("store-password-file " + dir.resolve("absent"));
    }
}
