package dev.sandgate.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** CI runs the watch benchmark in its smoke mode so that it cannot rot. Asserts what it measured, never how fast. */
class WatchBenchmarkSmokeTest {
    @Test
    void smokeRunDeliversEveryChangeToEveryWatcherAndReportsEachPhase() throws Exception {
        WatchBenchmark.Settings settings = WatchBenchmark.Settings.parse("--smoke");

        List<WatchBenchmark.Row> rows = WatchBenchmark.run(settings);

        assertThat(rows).extracting(WatchBenchmark.Row::watchers).containsExactly(0, 10);
        assertThat(rows).allSatisfy(row -> {
            assertThat(row.calls()).isPositive();
            assertThat(row.callErrors()).isZero();
            assertThat(row.overflowed()).isZero();
            assertThat(row.events()).isGreaterThanOrEqualTo(row.expectedEvents());
        });
        WatchBenchmark.Row watched = rows.get(1);
        assertThat(watched.delayP50()).isPositive().isLessThanOrEqualTo(watched.delayP99());
        assertThat(WatchBenchmark.markdown(settings, rows)).contains("| 10 |", "event delay p50 ms");
    }

    @Test
    void watcherCountsOutOfRangeAreRefusedNamingTheOption() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> WatchBenchmark.Settings.parse("--watchers", "-1"))
                .hasMessageContaining("--watchers");
    }
}
