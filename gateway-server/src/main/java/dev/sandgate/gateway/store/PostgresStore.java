package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Function;
import org.flywaydb.core.Flyway;

/**
 * The store on a PostgreSQL database, migrated by Flyway (db/postgresql), shared by any number of gateway replicas.
 *
 * <p>Each replica writes through its one writer connection with group commit ({@link GroupCommit}), as on SQLite, at
 * READ COMMITTED: every sandbox update is a compare-and-set on its resource version, and what replicas must not do at
 * once (change one sandbox, lead the background work) they coordinate with leases ({@link StoreTransaction#takeLease})
 * whose epochs fence stale holders. A batch that the server aborts for a deadlock or a serialization failure with
 * another replica's is run again. Reads borrow connections from a small pool, each transaction a read-only snapshot
 * (REPEATABLE READ). Nothing read is kept in memory: another replica's writes would not be in it.
 */
public final class PostgresStore implements Store {
    /** How many connections read at once. */
    private static final int READERS = 4;

    private static final String APPLICATION_NAME = "sandgate-gateway";

    /**
     * Where the store is and who connects to it.
     *
     * @param url a {@code jdbc:postgresql://} URL, without a password
     * @param user the user to connect as
     * @param password its password; empty when the server needs none
     */
    public record Settings(String url, String user, Optional<String> password) {
        public Settings {
            requireNonNull(url, "url is null");
            requireNonNull(user, "user is null");
            requireNonNull(password, "password is null");
        }

        /** Never the password. */
        @Override
        public String toString() {
            return "PostgresStore.Settings[url=" + url + ", user=" + user + "]";
        }
    }

    private final SqlStore store;
    private final Settings settings;

    /**
     * Connects, migrates the schema (Flyway serializes replicas that start at once) and opens the readers. Throws
     * {@link StoreException} if the server refuses the connection.
     */
    public PostgresStore(Settings settings) {
        this.settings = requireNonNull(settings, "settings is null");
        DecodedColumns decoded = new DecodedColumns();
        Connection writer = null;
        HikariDataSource pool = null;
        try {
            writer = connect(settings);
            Flyway.configure()
                    .dataSource(
                            settings.url(), settings.user(), settings.password().orElse(null))
                    .locations("classpath:db/postgresql")
                    .load()
                    .migrate();
            writer.setAutoCommit(false);
            pool = readers(settings);
            store = new SqlStore(
                    SqlDialect.POSTGRESQL,
                    new PreparedConnection(writer, decoded),
                    Readers.pooled(pool, decoded, pool));
        } catch (SQLException | RuntimeException e) {
            if (pool != null) {
                pool.close();
            }
            closeQuietly(writer);
            if (e instanceof StoreException store) {
                throw store;
            }
            throw new StoreException(
                    "cannot open the PostgreSQL store at " + settings.url() + " as " + settings.user(), e);
        }
    }

    static Connection connect(Settings settings) throws SQLException {
        Properties properties = new Properties();
        properties.setProperty("user", settings.user());
        settings.password().ifPresent(password -> properties.setProperty("password", password));
        properties.setProperty("ApplicationName", APPLICATION_NAME);
        return DriverManager.getConnection(settings.url(), properties);
    }

    private static HikariDataSource readers(Settings settings) {
        HikariConfig config = new HikariConfig();
        config.setPoolName("sandgate-store-readers");
        config.setJdbcUrl(settings.url());
        config.setUsername(settings.user());
        settings.password().ifPresent(config::setPassword);
        config.setMaximumPoolSize(READERS);
        config.setMinimumIdle(1);
        config.setAutoCommit(false);
        config.setReadOnly(true);
        // Each read transaction sees one snapshot, as a read on SQLite does.
        config.setTransactionIsolation("TRANSACTION_REPEATABLE_READ");
        config.addDataSourceProperty("ApplicationName", APPLICATION_NAME);
        return new HikariDataSource(config);
    }

    private static void closeQuietly(Connection connection) {
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException e) {
                // closing anyway
            }
        }
    }

    @Override
    public <T> T write(Function<StoreTransaction, T> work) {
        return store.write(work);
    }

    @Override
    public <T> T read(Function<StoreTransaction, T> work) {
        return store.read(work);
    }

    /**
     * Opens a connection of its own to the log of sandbox changes, listening for them: the one a replica's follower
     * reads every replica's changes from. The caller closes it.
     */
    public ChangeLog openChangeLog() {
        return ChangeLog.open(settings);
    }

    /** How many writes wait for the writer. */
    int queuedWrites() {
        return store.writes().queuedWrites();
    }

    /** Closes the readers, then the writer once no write runs. */
    @Override
    public void close() {
        store.close();
    }
}
