package dev.sandgate.benchmarks;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * What one run measured: one row per (clients, operation), and the conditions it ran under.
 *
 * @param environment the machine, the JVM and the store
 * @param rows the measurements, grouped by clients, the no-op first
 */
record Report(Environment environment, List<Row> rows) {
    static final String NOOP = "no-op (bare gRPC)";
    static final String LIFECYCLE = "all four";

    /** The name of a paced row: the operation and the rate offered. */
    static String paced(String operation, double rate) {
        return String.format(Locale.ROOT, "%s, paced %,.0f/s", operation, rate);
    }

    Report {
        requireNonNull(environment, "environment is null");
        rows = List.copyOf(requireNonNull(rows, "rows is null"));
    }

    /**
     * One phase.
     *
     * @param p50VsNoop this row's median latency divided by the no-op's at the same number of clients
     * @param p99VsNoop the same for the 99th percentile
     * @param cpuMillisPerCall the CPU time the whole process (gateway, driver, clients) used per call of the phase
     * @param othersCpuPercent the share of the machine's processors, in percent, that other processes took during the
     *     phase; NaN where the machine cannot tell
     * @param firstError the first failed call's error, empty when none failed
     */
    record Row(
            int clients,
            String operation,
            long calls,
            long errors,
            double opsPerSecond,
            double p50Millis,
            double p99Millis,
            double maxMillis,
            double p50VsNoop,
            double p99VsNoop,
            double cpuMillisPerCall,
            double othersCpuPercent,
            String firstError) {}

    /**
     * @param storedSandboxes the sandboxes the gateway's store held while the phases ran (counted through the API)
     * @param heapUsedAfterGcBytes the heap in use after a full collection at the end of the run
     * @param gcPauseMillis the total time the collectors reported for the measured phases
     * @param memoryOptions the JVM's heap and collector options ({@code -X...}), as given on its command line
     */
    record Environment(
            int processors,
            String java,
            String os,
            String memoryOptions,
            long maxHeapBytes,
            long heapUsedAfterGcBytes,
            long storedSandboxes,
            String synchronous,
            long gcPauseMillis,
            Duration elapsed,
            String driverDirectory,
            BenchmarkSettings settings) {}

    String markdown() {
        Environment env = environment;
        StringBuilder text = new StringBuilder();
        text.append("Sandgate gateway benchmark: reference driver (directory backend, rescanned every ")
                .append(env.settings().referenceWatchInterval().toMillis())
                .append(" ms, in ")
                .append(env.driverDirectory())
                .append("), SQLite store (WAL, synchronous=")
                .append(env.synchronous())
                .append(", on disk), gRPC over Netty on 127.0.0.1, blocking clients on one channel: closed loop, and")
                .append(" \"paced\" rows at a fixed offered rate with latency from each call's scheduled time.\n\n");
        text.append(String.format(
                Locale.ROOT,
                "- machine: %d processors, %s, Java %s%n- heap: max %d MiB (%s); %d MiB in use after a full GC at the end;"
                        + " %d ms of GC during the measured phases%n- stored sandboxes while measuring: %,d%n"
                        + "- calls per phase: up to %d (split between the clients), phase limit %d s, warm-up %d calls"
                        + " per operation%n- run time: %d s%n%n",
                env.processors(),
                env.os(),
                env.java(),
                env.maxHeapBytes() >> 20,
                env.memoryOptions().isEmpty() ? "the JVM's defaults" : env.memoryOptions(),
                env.heapUsedAfterGcBytes() >> 20,
                env.gcPauseMillis(),
                env.storedSandboxes(),
                env.settings().callsPerPhase(),
                env.settings().phaseLimit().toSeconds(),
                env.settings().warmupCalls(),
                env.elapsed().toSeconds()));
        text.append(
                "| clients | operation | calls | errors | ops/s | p50 ms | p99 ms | max ms | p50 / no-op | p99 / no-op |"
                        + " CPU ms / call | others' CPU % |\n");
        text.append("|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
        for (Row row : rows) {
            text.append(String.format(
                    Locale.ROOT,
                    "| %d | %s | %d | %d | %,.0f | %.2f | %.2f | %.1f | %s | %s | %.3f | %s |%n",
                    row.clients(),
                    row.operation(),
                    row.calls(),
                    row.errors(),
                    row.opsPerSecond(),
                    row.p50Millis(),
                    row.p99Millis(),
                    row.maxMillis(),
                    ratio(row.p50VsNoop()),
                    ratio(row.p99VsNoop()),
                    row.cpuMillisPerCall(),
                    Double.isNaN(row.othersCpuPercent())
                            ? "n/a"
                            : String.format(Locale.ROOT, "%.0f", row.othersCpuPercent())));
        }
        for (Row row : rows) {
            if (row.errors() > 0) {
                text.append(String.format(
                        Locale.ROOT,
                        "%n%d clients, %s: %d calls failed, the first with %s%n",
                        row.clients(),
                        row.operation(),
                        row.errors(),
                        row.firstError()));
            }
        }
        return text.toString();
    }

    private static String ratio(double value) {
        return String.format(Locale.ROOT, "%.1f×", value);
    }
}
