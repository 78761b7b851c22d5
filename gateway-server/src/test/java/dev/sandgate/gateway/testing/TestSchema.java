package dev.sandgate.gateway.testing;

import dev.sandgate.gateway.store.PostgresStore;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Which store the gateway fixtures open, and on PostgreSQL a schema of one gateway's own.
 *
 * <p>The system property {@value #STORE_PROPERTY} chooses: {@code sqlite} (the default) keeps the embedded store in the
 * gateway's data directory; {@code postgresql} gives each test gateway a fresh schema in the database that
 * {@link TestPostgres} names, which the fixture drops when it closes the gateway (a restart keeps it, and so the data).
 */
public final class TestSchema implements AutoCloseable {
    /** The system property that chooses the store of the test gateways: {@code sqlite} or {@code postgresql}. */
    public static final String STORE_PROPERTY = "sandgate.test.store";

    /** Schemas emptied by their last test, for the next one; dropped at exit. */
    private static final Queue<String> EMPTIED = new ConcurrentLinkedQueue<>();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(TestSchema::dropEmptied, "sandgate-test-schemas"));
    }

    private final PostgresStore.Settings database;
    private final String name;

    private TestSchema(PostgresStore.Settings database, String name) {
        this.database = database;
        this.name = name;
    }

    /** Whether the test gateways run on PostgreSQL in this run. */
    public static boolean onPostgres() {
        String store = System.getProperty(STORE_PROPERTY, "sqlite").strip().toLowerCase(Locale.ROOT);
        return switch (store) {
            case "", "sqlite" -> false;
            case "postgresql" -> true;
            default ->
                throw new IllegalArgumentException(
                        STORE_PROPERTY + " must be sqlite or postgresql, got '" + store + "'");
        };
    }

    /**
     * A new, empty schema in the test database; the test is skipped without one (or fails under CI, see
     * {@link TestPostgres}).
     */
    public static TestSchema create() throws Exception {
        PostgresStore.Settings database = TestPostgres.settings();
        String emptied = EMPTIED.poll();
        if (emptied != null) {
            return new TestSchema(database, emptied);
        }
        byte[] random = new byte[6];
        ThreadLocalRandom.current().nextBytes(random);
        String name = "test_" + HexFormat.of().formatHex(random);
        try (Connection connection = connect(database);
                Statement statement = connection.createStatement()) {
            statement.execute("CREATE SCHEMA " + name);
        }
        return new TestSchema(database, name);
    }

    /** {@link #create()} for fixtures that cannot throw checked exceptions. */
    public static TestSchema createUnchecked() {
        try {
            return create();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("cannot create a PostgreSQL schema for a test gateway", e);
        }
    }

    /** On a PostgreSQL run a new schema ({@link #create()}), else none: null. */
    public static TestSchema forThisRun() throws Exception {
        return onPostgres() ? create() : null;
    }

    /** {@code args}, followed by the store options of {@code schema} unless it is null. */
    public static String[] withStore(TestSchema schema, String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        if (schema != null) {
            all.addAll(schema.storeArgs());
        }
        return all.toArray(String[]::new);
    }

    /** Closes {@code schema} unless it is null. */
    public static void closeIfAny(TestSchema schema) {
        if (schema != null) {
            schema.close();
        }
    }

    public String name() {
        return name;
    }

    /** The database's URL with this schema as the connections' current one. */
    public String url() {
        String url = database.url();
        return url + (url.contains("?") ? "&" : "?") + "currentSchema=" + name;
    }

    /** The store's settings on this schema. */
    public PostgresStore.Settings settings() {
        return new PostgresStore.Settings(url(), database.user(), database.password());
    }

    /** The gateway options that put its store in this schema. */
    public List<String> storeArgs() {
        List<String> args = new ArrayList<>(List.of("--store-url", url(), "--store-user", database.user()));
        String passwordFile = System.getenv("SANDGATE_POSTGRES_PASSWORD_FILE");
        if (passwordFile != null) {
            args.addAll(List.of("--store-password-file", passwordFile));
        }
        return args;
    }

    /** Empties the schema for the next test (every table truncated but Flyway's history), or drops it. */
    @Override
    public void close() {
        try (Connection connection = connect(database);
                Statement statement = connection.createStatement()) {
            List<String> tables = new ArrayList<>();
            try (ResultSet rs = statement.executeQuery("SELECT tablename FROM pg_tables WHERE schemaname = '" + name
                    + "' AND tablename <> 'flyway_schema_history'")) {
                while (rs.next()) {
                    tables.add(name + "." + rs.getString(1));
                }
            }
            if (tables.isEmpty()) {
                statement.execute("DROP SCHEMA IF EXISTS " + name + " CASCADE");
                return;
            }
            statement.execute("TRUNCATE " + String.join(", ", tables) + " RESTART IDENTITY CASCADE");
            EMPTIED.add(name);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot empty the test schema " + name, e);
        }
    }

    private static void dropEmptied() {
        if (EMPTIED.isEmpty()) {
            return;
        }
        try {
            PostgresStore.Settings database = TestPostgres.settings();
            try (Connection connection = connect(database);
                    Statement statement = connection.createStatement()) {
                for (String name = EMPTIED.poll(); name != null; name = EMPTIED.poll()) {
                    statement.execute("DROP SCHEMA IF EXISTS " + name + " CASCADE");
                }
            }
        } catch (Exception e) {
            System.err.println("could not drop the test schemas: " + e);
        }
    }

    private static Connection connect(PostgresStore.Settings database) throws SQLException {
        return DriverManager.getConnection(
                database.url(), database.user(), database.password().orElse(null));
    }
}
