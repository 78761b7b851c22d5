package dev.sandgate.testing.replicas;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;

/**
 * A schema of its own, created empty, in the PostgreSQL that SANDGATE_POSTGRES_URL, _USER and _PASSWORD_FILE name
 * (scripts/engines/postgres.sh), dropped on close. Without those variables the test is skipped, unless engines are
 * required (CI), where it fails. The JDBC driver comes from the caller's class path (the gateway's).
 */
public final class StoreSchema implements AutoCloseable {
    private final String url;
    private final String user;
    private final String passwordFile;
    private final String schema;

    private StoreSchema(String url, String user, String passwordFile, String schema) {
        this.url = url;
        this.user = user;
        this.passwordFile = passwordFile;
        this.schema = schema;
    }

    /** Creates a fresh schema, or skips the test without a database. */
    public static StoreSchema fresh() throws Exception {
        String url = System.getenv("SANDGATE_POSTGRES_URL");
        String user = System.getenv("SANDGATE_POSTGRES_USER");
        String passwordFile = System.getenv("SANDGATE_POSTGRES_PASSWORD_FILE");
        if (url == null || user == null || passwordFile == null) {
            assertThat(Boolean.getBoolean("sandgate.requireEngines"))
                    .as("SANDGATE_POSTGRES_URL, _USER and _PASSWORD_FILE are set (scripts/engines/postgres.sh)")
                    .isFalse();
            Assumptions.abort("no PostgreSQL: run scripts/test, which starts one (scripts/engines/postgres.sh)");
        }
        String schema = "replica_kill_" + UUID.randomUUID().toString().substring(0, 8);
        StoreSchema created = new StoreSchema(url, user, passwordFile, schema);
        created.execute("CREATE SCHEMA " + schema);
        return created;
    }

    /** The gateway's store options for this schema. */
    List<String> gatewayArguments() {
        String schemaUrl = url + (url.contains("?") ? "&" : "?") + "currentSchema=" + schema;
        return List.of("--store-url", schemaUrl, "--store-user", user, "--store-password-file", passwordFile);
    }

    private void execute(String sql) throws Exception {
        String password =
                Files.readString(Path.of(passwordFile), StandardCharsets.UTF_8).strip();
        try (Connection connection = DriverManager.getConnection(url, user, password);
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    @Override
    public void close() throws Exception {
        try {
            execute("DROP SCHEMA " + schema + " CASCADE");
        } catch (SQLException e) {
            throw new IllegalStateException("cannot drop the schema " + schema, e);
        }
    }
}
