package dev.sandgate.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * CI runs the store-configurations benchmark in its smoke mode (SQLite and two replicas on the PostgreSQL that
 * scripts/engines/postgres.sh starts) so that it cannot rot. Asserts that it measured everything, never how fast.
 */
class ReplicaBenchmarkSmokeTest {
    @Test
    void smokeRunMeasuresEveryConfigurationWithoutErrors() throws Exception {
        ReplicaSettings settings = ReplicaSettings.parse(smokeArguments());

        List<ReplicaBenchmark.Row> rows = ReplicaBenchmark.run(settings);

        assertThat(rows)
                .extracting(row -> row.configuration().name())
                .containsExactlyElementsOf(settings.configurations().stream()
                        .map(ReplicaSettings.Configuration::name)
                        .toList());
        assertThat(rows).allSatisfy(row -> {
            assertThat(row.errors()).as(row.firstError()).isZero();
            assertThat(row.clients()).isEqualTo(16);
            assertThat(row.floorOpsPerSecond()).isPositive().isFinite();
            assertThat(row.floorP50()).isPositive().isLessThanOrEqualTo(row.floorP99());
            assertThat(row.opsPerSecond()).isPositive().isFinite();
            assertThat(row.p50()).isPositive().isLessThanOrEqualTo(row.p99());
            assertThat(row.opP50()).hasSize(4).allSatisfy(p50 -> assertThat(p50).isPositive());
        });
        String markdown = ReplicaBenchmark.markdown(settings, rows, "0.00 0.00 0.00", "0.00 0.00 0.00");
        assertThat(markdown).contains("| 1 | sqlite-full | SQLite, synchronous=FULL | 1 | 16 |");
        if (postgresIsThere()) {
            assertThat(markdown).contains("| 1 | postgres-2 | PostgreSQL | 2 | 16 |");
        }
    }

    @Test
    void configurationsAreParsedAndUnknownOnesRefusedNamingTheOption() {
        assertThat(ReplicaSettings.parse("--configs", "sqlite,postgres,postgres-3")
                        .configurations())
                .extracting(
                        ReplicaSettings.Configuration::replicas,
                        ReplicaSettings.Configuration::postgres,
                        ReplicaSettings.Configuration::synchronous)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(1, false, "NORMAL"),
                        org.assertj.core.groups.Tuple.tuple(1, true, "n/a"),
                        org.assertj.core.groups.Tuple.tuple(3, true, "n/a"));
        assertThatThrownBy(() -> ReplicaSettings.parse("--configs", "mysql")).hasMessageContaining("--configs");
        assertThatThrownBy(() -> ReplicaSettings.parse("--configs", "postgres-0"))
                .hasMessageContaining("--configs");
    }

    /** The smoke run; without PostgreSQL (outside CI, which requires it) its SQLite configuration only. */
    private static String[] smokeArguments() {
        if (postgresIsThere()) {
            return new String[] {"--smoke"};
        }
        assertThat(Boolean.getBoolean("sandgate.requireEngines"))
                .as("SANDGATE_POSTGRES_URL and SANDGATE_POSTGRES_USER are set (scripts/engines/postgres.sh)")
                .isFalse();
        return new String[] {"--smoke", "--configs", "sqlite-full"};
    }

    private static boolean postgresIsThere() {
        return System.getenv("SANDGATE_POSTGRES_URL") != null && System.getenv("SANDGATE_POSTGRES_USER") != null;
    }
}
