package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("sqlite-only") // Not on PostgreSQL: SQLite itself, its migrations and indexes.
class StoreMigrationTest {
    @TempDir
    Path dir;

    private List<String> indexes(String url) throws SQLException {
        List<String> names = new ArrayList<>();
        try (Connection connection = DriverManager.getConnection(url);
                Statement statement = connection.createStatement();
                ResultSet rs =
                        statement.executeQuery("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
                                + " AND tbl_name NOT LIKE 'flyway%' ORDER BY name")) {
            while (rs.next()) {
                names.add(rs.getString(1));
            }
        }
        return names;
    }

    @Test
    void aDatabaseOfTheFirstSchemaIsMigratedOnOpenAndKeepsItsRecords() throws SQLException {
        Path file = dir.resolve("store.db");
        String url = "jdbc:sqlite:" + file;
        Flyway.configure()
                .dataSource(url, null, null)
                .locations("classpath:db/migration")
                .target("1")
                .load()
                .migrate();
        try (Connection connection = DriverManager.getConnection(url);
                Statement statement = connection.createStatement()) {
            statement.executeUpdate("INSERT INTO request (request_id, method, fingerprint, sandbox_id, generation,"
                    + " state, result_json, create_ms, complete_ms)"
                    + " VALUES ('r1', 'StopSandbox', 'f', NULL, 1, 'PENDING', NULL, 1000, NULL)");
        }
        assertThat(indexes(url)).contains("sandbox_pending", "request_completed");

        try (SqliteStore store = new SqliteStore(file, SqliteStore.Synchronous.NORMAL)) {
            assertThat(store.request("r1")).map(RequestRecord::method).contains("StopSandbox");
            store.write(tx -> {
                tx.completeRequest("r1", RequestResult.success("STOPPED_NOW", "s", 1, 0), Instant.ofEpochMilli(2000));
                return null;
            });
            int pruned = store.write(tx -> tx.pruneRequests(Instant.ofEpochMilli(3000), 10));
            assertThat(pruned).isEqualTo(1);
        }
        assertThat(indexes(url)).containsExactly("sandbox_label_lookup", "sandbox_lease_due", "sandbox_workspace_name");
    }
}
