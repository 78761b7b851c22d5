package dev.sandgate.gateway.testing;

import dev.sandgate.gateway.store.PostgresStore;
import dev.sandgate.testing.StoreSchema;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;

/**
 * The PostgreSQL that scripts/engines/postgres.sh starts and names in SANDGATE_POSTGRES_URL, _USER and
 * _PASSWORD_FILE ({@link StoreSchema.Database}). Without it a test is skipped, unless engines are required (CI), where
 * it fails.
 */
public final class TestPostgres {
    private TestPostgres() {}

    /** The database's settings, or the test is skipped (or fails under CI). */
    public static PostgresStore.Settings settings() {
        StoreSchema.Database database = StoreSchema.Database.fromEnvironment();
        return new PostgresStore.Settings(database.url(), database.user(), database.password());
    }

    /** The database's settings with {@code schema} as the connections' current one. */
    public static PostgresStore.Settings settings(StoreSchema schema) {
        PostgresStore.Settings database = settings();
        return new PostgresStore.Settings(schema.url(), database.user(), database.password());
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
