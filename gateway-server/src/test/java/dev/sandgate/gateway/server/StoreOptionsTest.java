package dev.sandgate.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class StoreOptionsTest {
    private static GatewaySettings load(String... args) {
        return GatewaySettings.load(args, Map.of());
    }

    @Test
    @DisplayName("without store-url the gateway keeps the embedded SQLite store")
    void sqliteByDefault() {
        assertThat(load().postgres()).isEmpty();
    }

    @Test
    @DisplayName("store-url, store-user and store-password-file name a PostgreSQL store, also from the environment")
    void postgresOptions() {
        GatewaySettings flags = load(
                "--store-url",
                "jdbc:postgresql://db.example:5432/sandgate",
                "--store-user",
                "gw",
                "--store-password-file",
                "/run/secrets/db");
        GatewaySettings environment = GatewaySettings.load(
                new String[0],
                Map.of("SANDGATE_STORE_URL", "jdbc:postgresql://db.example/sandgate", "SANDGATE_STORE_USER", "gw"));

        assertThat(flags.postgres())
                .contains(new GatewaySettings.PostgresOptions(
                        "jdbc:postgresql://db.example:5432/sandgate", "gw", Optional.of(Path.of("/run/secrets/db"))));
        assertThat(environment.postgres().orElseThrow().passwordFile()).isEmpty();
    }

    @Test
    @DisplayName("replica-lease-ttl sets the replicas' lease time to live, 10s unless given, 1s to 10m")
    void replicaLeaseTtl() {
        String[] store = {"--store-url", "jdbc:postgresql://db/sandgate", "--store-user", "gw"};

        assertThat(load(store).postgres().orElseThrow().replicaLeaseTtl()).isEqualTo(Duration.ofSeconds(10));
        assertThat(GatewaySettings.load(store, Map.of("SANDGATE_REPLICA_LEASE_TTL", "2s"))
                        .postgres()
                        .orElseThrow()
                        .replicaLeaseTtl())
                .isEqualTo(Duration.ofSeconds(2));
        assertThat(GatewaySettings.load(store, Map.of("SANDGATE_REPLICA_LEASE_TTL", "10m"))
                        .postgres()
                        .orElseThrow()
                        .replicaLeaseTtl())
                .isEqualTo(Duration.ofMinutes(10));
        for (String wrong : new String[] {"999ms", "11m", "0s", "soon"}) {
            assertThatThrownBy(() -> GatewaySettings.load(store, Map.of("SANDGATE_REPLICA_LEASE_TTL", wrong)))
                    .as(wrong)
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("replica-lease-ttl");
        }
        assertThatThrownBy(() -> load("--replica-lease-ttl", "5s"))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("replica-lease-ttl applies to a PostgreSQL store only");
    }

    @Test
    @DisplayName("each wrong combination is refused naming the option")
    void errorsNameTheOption() {
        assertThatThrownBy(() -> load("--store-user", "gw"))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("store-user applies to a PostgreSQL store only");
        assertThatThrownBy(() -> load("--store-password-file", "/x"))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("store-password-file applies to a PostgreSQL store only");
        assertThatThrownBy(() -> load("--store-url", "jdbc:mysql://db/sandgate", "--store-user", "gw"))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("store-url must be jdbc:postgresql://HOST[:PORT]/DATABASE");
        assertThatThrownBy(() -> load("--store-url", "jdbc:postgresql://db/sandgate"))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("store-url needs store-user");
        assertThatThrownBy(() -> load(
                        "--store-url",
                        "jdbc:postgresql://db/sandgate",
                        "--store-user",
                        "gw",
                        "--store-synchronous",
                        "FULL"))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("store-synchronous applies to the embedded SQLite store only");
    }

    @Test
    @DisplayName("a password in store-url is refused without echoing it")
    void passwordInUrlRefused() {
        assertThatThrownBy(() -> load(
                        "--store-url", "jdbc:postgresql://db/sandgate?user=gw&password=hunter2", "--store-user", "gw"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("store-url must not carry the password")
                .hasMessageNotContaining("hunter2");
    }

    @Test
    @DisplayName("the usage lists the store options")
    void usage() {
        assertThat(GatewaySettings.usage())
                .contains("--store-url URL", "--store-user USER", "--store-password-file FILE");
    }
}
