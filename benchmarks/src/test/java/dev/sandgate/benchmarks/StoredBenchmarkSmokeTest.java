package dev.sandgate.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** CI runs the stored-sandboxes benchmark in its smoke mode so that it cannot rot. Asserts what it measured, never how fast. */
class StoredBenchmarkSmokeTest {
    @Test
    void smokeRunStartsOnEveryGeneratedStoreAndListsEverySandboxWithoutErrors() throws Exception {
        StoredBenchmark.Settings settings = StoredBenchmark.Settings.parse("--smoke");

        List<StoredBenchmark.Row> rows = StoredBenchmark.run(settings);

        assertThat(rows).extracting(StoredBenchmark.Row::stored).containsExactly(1000, 5000);
        assertThat(rows).allSatisfy(row -> {
            assertThat(row.listed()).isEqualTo(row.stored());
            assertThat(row.pages()).isGreaterThanOrEqualTo(Math.ceilDiv(row.stored(), 1000));
            assertThat(row.getErrors()).isZero();
            assertThat(row.notReady()).isZero();
            assertThat(row.reconciled()).isIn("yes", "?");
            assertThat(row.startSeconds()).isPositive();
            assertThat(row.restartSeconds())
                    .hasSize(1)
                    .allSatisfy(seconds -> assertThat(seconds).isPositive());
            assertThat(row.get1P50()).isPositive().isLessThanOrEqualTo(row.get1P99());
            assertThat(row.get64P50()).isPositive().isLessThanOrEqualTo(row.get64P99());
            assertThat(row.heapMiB()).isPositive();
        });
        assertThat(StoredBenchmark.markdown(settings, rows))
                .contains("| 1000 |", "| 5000 |", "start until ready", "| 1.00 / 1.00 |");
    }

    @Test
    void countsOutOfRangeAreRefusedNamingTheOption() {
        assertThatThrownBy(() -> StoredBenchmark.Settings.parse("--counts", "0"))
                .hasMessageContaining("--counts");
    }
}
