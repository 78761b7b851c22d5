package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Function;
import org.flywaydb.core.Flyway;

/**
 * The store on a PostgreSQL database, migrated by Flyway (db/postgresql).
 *
 * <p>Until gateway replicas exist, one gateway writes a database: it holds a session-level advisory lock on its writer
 * connection for as long as it runs, and a second gateway on the same database refuses to start. Writes go through
 * that one connection with group commit ({@link GroupCommit}), as on SQLite; reads borrow connections from a small
 * pool, each transaction a read-only snapshot (REPEATABLE READ). Nothing read is kept in memory: the store is meant to
 * be shared by replicas, which a cache of one gateway would not see the writes of.
 */
public final class PostgresStore implements Store {
    /** How many connections read at once. */
    private static final int READERS = 4;
    /**
     * The advisory lock the writing gateway holds ("sandgate" in ASCII). Advisory locks are per database, so gateways
     * on different databases of one server do not contend.
     */
    static final long WRITER_LOCK = 0x73616e6467617465L;

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
    private final Connection writer;

    /**
     * Connects, takes the writer's lock, migrates the schema and opens the readers. Throws {@link StoreException} if
     * the server refuses the connection or another gateway holds the lock.
     */
    public PostgresStore(Settings settings) {
        requireNonNull(settings, "settings is null");
        DecodedColumns decoded = new DecodedColumns();
        Connection writer = null;
        HikariDataSource pool = null;
        try {
            writer = connect(settings);
            holdWriterLock(writer, settings);
            Flyway.configure()
                    .dataSource(
                            settings.url(), settings.user(), settings.password().orElse(null))
                    .locations("classpath:db/postgresql")
                    .load()
                    .migrate();
            writer.setAutoCommit(false);
            this.writer = writer;
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

    private static Connection connect(Settings settings) throws SQLException {
        Properties properties = new Properties();
        properties.setProperty("user", settings.user());
        settings.password().ifPresent(password -> properties.setProperty("password", password));
        properties.setProperty("ApplicationName", APPLICATION_NAME);
        return DriverManager.getConnection(settings.url(), properties);
    }

    /** Takes the advisory lock of the single writer, or refuses: another gateway writes this database. */
    private static void holdWriterLock(Connection writer, Settings settings) throws SQLException {
        try (PreparedStatement statement = writer.prepareStatement("SELECT pg_try_advisory_lock(?)")) {
            statement.setLong(1, WRITER_LOCK);
            try (ResultSet rs = statement.executeQuery()) {
                rs.next();
                if (rs.getBoolean(1)) {
                    return;
                }
            }
        }
        throw new StoreException("another gateway (" + holder(writer) + ") is using the PostgreSQL store at "
                + settings.url() + "; one gateway writes a store until replicas exist: stop that one first");
    }

    /** Who holds the writer's lock, as far as this user may see. */
    private static String holder(Connection connection) {
        String sql = "SELECT a.pid, a.client_addr, a.application_name FROM pg_locks l"
                + " JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted"
                + " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                + " AND ((l.classid::bigint << 32) | l.objid::bigint) = ?";
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setLong(1, WRITER_LOCK);
            try (ResultSet rs = statement.executeQuery()) {
                if (rs.next()) {
                    String address = rs.getString("client_addr");
                    return "server process " + rs.getLong("pid") + (address == null ? "" : ", client " + address);
                }
            }
        } catch (SQLException e) {
            // Only for the message.
        }
        return "the holder of its writer lock";
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
     * Releases the writer's lock, then closes the readers and the writer. Released explicitly: the server ends a
     * closed session, and frees its locks, only after the client has gone, so a gateway started right after this one
     * stopped could still find the lock held.
     */
    @Override
    public void close() {
        store.writes().closeHolding(() -> {
            try (PreparedStatement statement = writer.prepareStatement("SELECT pg_advisory_unlock(?)")) {
                writer.rollback();
                statement.setLong(1, WRITER_LOCK);
                statement.execute();
                writer.commit();
            } catch (SQLException e) {
                // The session ends with the connection, and its lock with it.
            }
        });
        store.close();
    }
}
