package dev.sandgate.benchmarks;

import static java.util.Objects.requireNonNull;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * What one run does.
 *
 * @param clientCounts the concurrency levels, each run in turn
 * @param callsPerPhase how many calls of one operation each level makes (split evenly between its clients); the create
 *     phase creates this many distinct sandboxes, which the stop, start and delete phases then work through
 * @param phaseLimit the most one phase may take; a phase that reaches it ends early and says so in its call count
 * @param storedSandboxes how many sandboxes are created before measuring, and stay stored throughout
 * @param warmupCalls calls of each operation made (and not measured) before the first level
 * @param synchronous the SQLite synchronous mode the gateway's store runs with
 * @param referenceWatchInterval how often the reference driver's watch rescans its directory (its default, 50 ms, is
 *     meant for tests: with thousands of sandboxes stored, the rescans alone would take most of the CPU)
 * @param pacedRate if positive, the highest concurrency level also runs each operation paced at this aggregate rate
 *     (calls per second offered, latency from each call's scheduled time); 0 skips the paced round
 * @param driverDirectory where the reference driver keeps its sandboxes; empty: a temporary folder in shared memory
 *     ({@code /dev/shm}) when there is one, else next to the store
 * @param output where the markdown report is also written, if anywhere
 * @param trace where each paced phase's calls are written, one CSV file per operation, if anywhere
 */
record BenchmarkSettings(
        List<Integer> clientCounts,
        int callsPerPhase,
        Duration phaseLimit,
        int storedSandboxes,
        int warmupCalls,
        String synchronous,
        Duration referenceWatchInterval,
        double pacedRate,
        Optional<Path> driverDirectory,
        Optional<Path> output,
        Optional<Path> trace) {
    static final String USAGE = """
            Usage: GatewayBenchmark [--smoke] [--clients 1,16,64] [--calls N] [--stored N] [--warmup N]
                                    [--phase-limit 60s] [--synchronous NORMAL|FULL] [--watch-interval 1000ms]
                                    [--rate 2000] [--driver-dir DIR] [--output FILE] [--trace DIR]
              --smoke        a short run (under a minute) with small counts: CI runs it so that the tool cannot rot
              --clients      concurrency levels (default 1,16,64)
              --calls        calls of each operation per level (default 3000)
              --stored       sandboxes stored before measuring (default 10000)
              --warmup       unmeasured calls of each operation first (default 1000)
              --phase-limit  the most one phase may take (default 60s)
              --synchronous  the store's SQLite synchronous mode (default NORMAL, the gateway's default)
              --watch-interval  how often the reference driver rescans its directory, in ms (default 1000ms)
              --rate         also run each operation paced at this many calls/s offered, with the highest
                             number of clients; latency counts from each call's scheduled time (default 2000,
                             the target of issue 3; 0: no paced round)
              --driver-dir   the reference driver's directory (default: a temporary folder in /dev/shm when it
                             exists, else next to the store; the store is always in the temporary directory)
              --output       also write the markdown report to FILE
              --trace        write each paced phase's calls to DIR/paced-<operation>.csv: when each was due
                             and its latency, with the phase's start as JVM uptime (to line up with a GC log)
            """;

    static final BenchmarkSettings FULL = new BenchmarkSettings(
            List.of(1, 16, 64),
            3000,
            Duration.ofSeconds(60),
            10_000,
            1000,
            "NORMAL",
            Duration.ofSeconds(1),
            2000,
            Optional.empty(),
            Optional.empty(),
            Optional.empty());

    static final BenchmarkSettings SMOKE = new BenchmarkSettings(
            List.of(1, 16, 64),
            128,
            Duration.ofSeconds(5),
            200,
            64,
            "NORMAL",
            Duration.ofSeconds(1),
            200,
            Optional.empty(),
            Optional.empty(),
            Optional.empty());

    BenchmarkSettings {
        clientCounts = List.copyOf(requireNonNull(clientCounts, "clientCounts is null"));
        requireNonNull(phaseLimit, "phaseLimit is null");
        requireNonNull(synchronous, "synchronous is null");
        requireNonNull(referenceWatchInterval, "referenceWatchInterval is null");
        requireNonNull(driverDirectory, "driverDirectory is null");
        requireNonNull(output, "output is null");
        requireNonNull(trace, "trace is null");
        if (!(pacedRate >= 0) || pacedRate > 1_000_000) {
            throw new IllegalArgumentException("--rate must be between 0 and 1000000 calls per second");
        }
        if (clientCounts.isEmpty() || clientCounts.stream().anyMatch(c -> c < 1 || c > 1024)) {
            throw new IllegalArgumentException("--clients: each level must be between 1 and 1024");
        }
        if (callsPerPhase < 1 || storedSandboxes < 0 || warmupCalls < 0) {
            throw new IllegalArgumentException("--calls must be positive, --stored and --warmup not negative");
        }
        if (!synchronous.equals("NORMAL") && !synchronous.equals("FULL")) {
            throw new IllegalArgumentException("--synchronous must be NORMAL or FULL");
        }
    }

    /** How many calls each of {@code clients} clients makes in one phase. */
    int callsPerClient(int clients) {
        return Math.ceilDiv(callsPerPhase, clients);
    }

    static BenchmarkSettings parse(String... args) {
        BenchmarkOptions options = BenchmarkOptions.parse(
                args,
                Set.of(
                        "--clients",
                        "--calls",
                        "--stored",
                        "--warmup",
                        "--phase-limit",
                        "--synchronous",
                        "--watch-interval",
                        "--rate",
                        "--driver-dir",
                        "--output",
                        "--trace"),
                Set.of("--smoke"));
        BenchmarkSettings base = options.has("--smoke") ? SMOKE : FULL;
        return new BenchmarkSettings(
                options.integers("--clients", base.clientCounts),
                options.integer("--calls", base.callsPerPhase),
                options.seconds("--phase-limit", base.phaseLimit),
                options.integer("--stored", base.storedSandboxes),
                options.integer("--warmup", base.warmupCalls),
                options.string("--synchronous")
                        .map(mode -> mode.toUpperCase(Locale.ROOT))
                        .orElse(base.synchronous),
                options.millis("--watch-interval", base.referenceWatchInterval),
                options.number("--rate", base.pacedRate),
                options.path("--driver-dir").or(() -> base.driverDirectory),
                options.path("--output"),
                options.path("--trace"));
    }
}
