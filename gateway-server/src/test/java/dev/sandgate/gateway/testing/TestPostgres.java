package dev.sandgate.gateway.testing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.gateway.store.PostgresStore;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;

/**
 * The PostgreSQL that scripts/engines/postgres.sh starts and names in SANDGATE_POSTGRES_URL, _USER and
 * _PASSWORD_FILE. Without it a test is skipped, unless engines are required (CI), where it fails.
 */
public final class TestPostgres {
    private TestPostgres() {}

    /** The database's settings, or the test is skipped (or fails under CI). */
    public static PostgresStore.Settings settings() throws Exception {
        String url = System.getenv("SANDGATE_POSTGRES_URL");
        String user = System.getenv("SANDGATE_POSTGRES_USER");
        String passwordFile = System.getenv("SANDGATE_POSTGRES_PASSWORD_FILE");
        if (url == null || user == null) {
            assertThat(Boolean.getBoolean("sandgate.requireEngines"))
                    .as("SANDGATE_POSTGRES_URL and SANDGATE_POSTGRES_USER are set (scripts/engines/postgres.sh)")
                    .isFalse();
            Assumptions.abort("no PostgreSQL: run scripts/test, which starts one (scripts/engines/postgres.sh)");
        }
        Optional<String> password = passwordFile == null
                ? Optional.empty()
                : Optional.of(Files.readString(Path.of(passwordFile), StandardCharsets.UTF_8)
                        .strip());
        return new PostgresStore.Settings(url, user, password);
    }

    /** Empties every table of the store (migrated already). */
    public static void truncate(PostgresStore.Settings settings) throws Exception {
        try (Connection connection = DriverManager.getConnection(
                        settings.url(), settings.user(), settings.password().orElse(null));
                Statement statement = connection.createStatement()) {
            statement.execute("TRUNCATE sandbox, sandbox_label, policy_revision, request, gateway_meta, replica_lease");
        }
    }
}
