package dev.sandgate.gateway.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.testing.EngineTest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * The store contract on a real PostgreSQL (started by scripts/engines/postgres.sh, which exports
 * SANDGATE_POSTGRES_URL, SANDGATE_POSTGRES_USER and SANDGATE_POSTGRES_PASSWORD_FILE). Without it the class is skipped,
 * unless engines are required (CI), where it fails. Each test starts from empty tables.
 */
@EngineTest
class PostgresStoreContractTest extends StoreContractTest {
    /** The database named by the environment, or the test is skipped (or fails under CI). */
    static PostgresStore.Settings settings() throws Exception {
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

    @Override
    Store openEmpty() throws Exception {
        PostgresStore.Settings settings = settings();
        PostgresStore opened = new PostgresStore(settings);
        try (Connection connection = DriverManager.getConnection(
                        settings.url(), settings.user(), settings.password().orElse(null));
                Statement statement = connection.createStatement()) {
            statement.execute("TRUNCATE sandbox, sandbox_label, policy_revision, request, gateway_meta");
        } catch (Exception e) {
            opened.close();
            throw e;
        }
        return opened;
    }

    @Test
    @DisplayName("a second store on the same database refuses to open while the first writes it, and opens after")
    void singleWriter() throws Exception {
        PostgresStore.Settings settings = settings();

        assertThatThrownBy(() -> new PostgresStore(settings).close())
                .isInstanceOf(StoreException.class)
                .hasMessageContaining("another gateway")
                .hasMessageContaining(settings.url());

        store.close();
        store = null;
        store = new PostgresStore(settings);
        assertThat(metaRead("none")).isEmpty();
    }

    @Test
    @DisplayName("a wrong password is refused, and the message does not hold it")
    void wrongPassword() throws Exception {
        PostgresStore.Settings settings = settings();
        PostgresStore.Settings wrong =
                new PostgresStore.Settings(settings.url(), settings.user(), Optional.of("not-the-password-42"));

        assertThatThrownBy(() -> new PostgresStore(wrong).close())
                .isInstanceOf(StoreException.class)
                .hasMessageContaining(settings.user())
                .satisfies(e -> assertThat(messages(e)).doesNotContain("not-the-password-42"));
        assertThat(wrong.toString()).doesNotContain("not-the-password-42");
    }

    private static String messages(Throwable e) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            all.append(t).append('\n');
        }
        return all.toString();
    }
}
