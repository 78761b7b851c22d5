package dev.sandgate.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Assumptions;

/**
 * A gateway store of a test's own: an empty schema in the PostgreSQL that SANDGATE_POSTGRES_URL, _USER and
 * _PASSWORD_FILE name (scripts/engines/postgres.sh), and which store a run's test gateways use.
 *
 * <p>The system property {@value #STORE_PROPERTY} chooses that store: {@code sqlite} (the default) keeps the embedded
 * store in the gateway's data directory; {@code postgresql} gives each test gateway a schema of this class, which its
 * fixture closes when it closes the gateway (a restart keeps it, and so the data). Closing empties the schema for the
 * next test of the JVM; the emptied ones are dropped at exit.
 *
 * <p>Without the database a test is skipped, unless engines are required (CI), where it fails. The JDBC driver comes
 * from the caller's class path (the gateway's).
 */
public final class StoreSchema implements AutoCloseable {
    /** The system property that chooses the store of the test gateways: {@code sqlite} or {@code postgresql}. */
    public static final String STORE_PROPERTY = "sandgate.test.store";

    /** Schemas emptied by their last test, for the next one; dropped at exit. */
    private static final Queue<String> EMPTIED = new ConcurrentLinkedQueue<>();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(StoreSchema::dropEmptied, "sandgate-test-schemas"));
    }

    /**
     * The test database: its JDBC URL, its user, and the file that holds its password (none where it needs none).
     */
    public record Database(String url, String user, Optional<String> passwordFile) {
        /** The database that the environment names, or the test is skipped (or fails under CI). */
        public static Database fromEnvironment() {
            String url = System.getenv("SANDGATE_POSTGRES_URL");
            String user = System.getenv("SANDGATE_POSTGRES_USER");
            if (url == null || user == null) {
                assertThat(Boolean.getBoolean("sandgate.requireEngines"))
                        .as("SANDGATE_POSTGRES_URL and SANDGATE_POSTGRES_USER are set (scripts/engines/postgres.sh)")
                        .isFalse();
                Assumptions.abort("no PostgreSQL: run scripts/test, which starts one (scripts/engines/postgres.sh)");
            }
            return new Database(url, user, Optional.ofNullable(System.getenv("SANDGATE_POSTGRES_PASSWORD_FILE")));
        }

        /** The password, read from its file. */
        public Optional<String> password() {
            return passwordFile.map(file -> {
                try {
                    return Files.readString(Path.of(file), StandardCharsets.UTF_8)
                            .strip();
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot read the PostgreSQL password file " + file, e);
                }
            });
        }

        /** A new connection to the database (its default schema). */
        public Connection connect() throws SQLException {
            return DriverManager.getConnection(url, user, password().orElse(null));
        }
    }

    private final Database database;
    private final String name;

    private StoreSchema(Database database, String name) {
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

    /** A new, empty schema in the test database; the test is skipped without one (or fails under CI). */
    public static StoreSchema create() throws SQLException {
        Database database = Database.fromEnvironment();
        String emptied = EMPTIED.poll();
        if (emptied != null) {
            return new StoreSchema(database, emptied);
        }
        byte[] random = new byte[6];
        ThreadLocalRandom.current().nextBytes(random);
        String name = "test_" + HexFormat.of().formatHex(random);
        try (Connection connection = database.connect();
                Statement statement = connection.createStatement()) {
            statement.execute("CREATE SCHEMA " + name);
        }
        return new StoreSchema(database, name);
    }

    /** {@link #create()} for fixtures that cannot throw checked exceptions. */
    public static StoreSchema createUnchecked() {
        try {
            return create();
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create a PostgreSQL schema for a test gateway", e);
        }
    }

    /** On a PostgreSQL run a new schema ({@link #create()}), else none: null. */
    public static StoreSchema forThisRun() throws SQLException {
        return onPostgres() ? create() : null;
    }

    /** {@code args}, followed by the store options of {@code schema} unless it is null. */
    public static String[] withStore(StoreSchema schema, String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        if (schema != null) {
            all.addAll(schema.storeArgs());
        }
        return all.toArray(String[]::new);
    }

    /** Closes {@code schema} unless it is null. */
    public static void closeIfAny(StoreSchema schema) {
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

    /** The gateway options that put its store in this schema. */
    public List<String> storeArgs() {
        List<String> args = new ArrayList<>(List.of("--store-url", url(), "--store-user", database.user()));
        database.passwordFile().ifPresent(file -> args.addAll(List.of("--store-password-file", file)));
        return args;
    }

    /** Empties the schema for the next test (every table truncated but Flyway's history), or drops it. */
    @Override
    public void close() {
        try (Connection connection = database.connect();
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
        try (Connection connection = Database.fromEnvironment().connect();
                Statement statement = connection.createStatement()) {
            for (String name = EMPTIED.poll(); name != null; name = EMPTIED.poll()) {
                statement.execute("DROP SCHEMA IF EXISTS " + name + " CASCADE");
            }
        } catch (Exception e) {
            System.err.println("could not drop the test schemas: " + e);
        }
    }
}
