package dev.sandgate.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.assertj.core.groups.Tuple;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** CI runs the tool in its smoke mode so that it cannot rot. Asserts that it measured everything, never how fast. */
class GatewayBenchmarkSmokeTest {
    @TempDir
    Path traces;

    @Test
    void smokeRunMeasuresEveryOperationAtEveryClientCountWithoutErrors() throws Exception {
        BenchmarkSettings settings = BenchmarkSettings.parse("--smoke", "--trace", traces.toString());

        Report report = GatewayBenchmark.run(settings);

        List<Tuple> expected = new ArrayList<>();
        for (int clients : List.of(1, 16, 64)) {
            for (String operation : List.of(Report.NOOP, "create", "stop", "start", "delete", Report.LIFECYCLE)) {
                expected.add(tuple(clients, operation));
            }
        }
        for (String operation : List.of(Report.NOOP, "create", "stop", "start", "delete", Report.LIFECYCLE)) {
            expected.add(tuple(64, Report.paced(operation, settings.pacedRate())));
        }
        assertThat(report.rows())
                .extracting(Report.Row::clients, Report.Row::operation)
                .containsExactlyElementsOf(expected);
        assertThat(report.rows()).allSatisfy(row -> {
            assertThat(row.calls()).isPositive();
            assertThat(row.errors()).isZero();
            assertThat(row.opsPerSecond()).isPositive().isFinite();
            assertThat(row.p50Millis()).isPositive().isLessThanOrEqualTo(row.p99Millis());
            assertThat(row.p99Millis()).isLessThanOrEqualTo(row.maxMillis());
            assertThat(row.p50VsNoop()).isPositive().isFinite();
            assertThat(row.p99VsNoop()).isPositive().isFinite();
            assertThat(row.cpuMillisPerCall()).isPositive().isFinite();
            if (Files.isReadable(Path.of("/proc/stat"))) {
                assertThat(row.othersCpuPercent()).isBetween(0.0, 100.0);
            } else {
                assertThat(row.othersCpuPercent()).isNaN();
            }
        });
        assertThat(report.environment().storedSandboxes()).isEqualTo(settings.storedSandboxes());
        assertThat(report.markdown())
                .contains(
                        "| 64 | delete |",
                        "| others' CPU % |",
                        "| 64 | delete, paced 200/s |",
                        "synchronous=NORMAL",
                        "stored sandboxes while measuring: 200");
        for (String operation : List.of("no-op", "create", "stop", "start", "delete")) {
            List<String> lines = Files.readAllLines(traces.resolve("paced-" + operation + ".csv"));
            assertThat(lines.get(0)).startsWith("# paced phase of " + operation + ", started at JVM uptime ");
            assertThat(lines.get(1)).isEqualTo("due_ms,latency_ms");
            assertThat(lines).as("a line per call").hasSize(2 + BenchmarkSettings.SMOKE.callsPerPhase());
        }
    }
}
