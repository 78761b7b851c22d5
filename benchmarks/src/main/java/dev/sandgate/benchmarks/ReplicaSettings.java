package dev.sandgate.benchmarks;

import static java.util.Objects.requireNonNull;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What one run of {@link ReplicaBenchmark} does.
 *
 * @param configurations the store configurations, measured in this order in each round
 * @param clientCounts the concurrency levels measured in each configuration
 * @param callsPerPhase calls of each operation per level (split evenly between its clients)
 * @param storedSandboxes sandboxes created (through the API) before measuring, which stay stored
 * @param warmupCalls unmeasured calls of each operation first
 * @param rounds how many times the whole list of configurations is measured, in turn
 * @param phaseLimit the most one phase may take
 * @param gatewayHeap each gateway process's heap ({@code -Xmx} and {@code -Xms})
 * @param output where the markdown report is also written, if anywhere
 */
record ReplicaSettings(
        List<Configuration> configurations,
        List<Integer> clientCounts,
        int callsPerPhase,
        int storedSandboxes,
        int warmupCalls,
        int rounds,
        Duration phaseLimit,
        String gatewayHeap,
        Optional<Path> output) {
    static final String USAGE = """
            Usage: ReplicaBenchmark [--smoke] [--configs sqlite,sqlite-full,postgres,postgres-3] [--clients 64]
                                    [--calls N] [--stored N] [--warmup N] [--rounds N] [--phase-limit 60s]
                                    [--gateway-heap 256m] [--output FILE]
              --smoke        a short run (about a minute) with small counts and --configs sqlite-full,postgres-2:
                             CI runs it so that the tool cannot rot
              --configs      store configurations, each a fresh store, gateway processes of their own and measured in
                             turn: sqlite (synchronous NORMAL), sqlite-full (synchronous FULL), postgres (one
                             replica), postgres-N (N replicas on one database, clients spread round-robin)
                             (default sqlite,sqlite-full,postgres,postgres-3)
              --clients      concurrency levels (default 64)
              --calls        calls of each operation per level (default 3000)
              --stored       sandboxes stored through the API before measuring (default 10000)
              --warmup       unmeasured calls of each operation first (default 1000)
              --rounds       how many times the configurations are measured in turn (default 1)
              --phase-limit  the most one phase may take (default 60s)
              --gateway-heap each gateway process's -Xmx and -Xms (default 256m)
              --output       also write the markdown report to FILE
            PostgreSQL: SANDGATE_POSTGRES_URL, SANDGATE_POSTGRES_USER and SANDGATE_POSTGRES_PASSWORD_FILE
            (scripts/engines/postgres.sh); each configuration gets a fresh schema there, dropped after it.
            """;

    static final ReplicaSettings FULL = new ReplicaSettings(
            Configuration.parseAll("sqlite,sqlite-full,postgres,postgres-3"),
            List.of(64),
            3000,
            10_000,
            1000,
            1,
            Duration.ofSeconds(60),
            "256m",
            Optional.empty());

    /** Both stores, one option of each and several replicas, with the fewest gateway processes. */
    static final ReplicaSettings SMOKE = new ReplicaSettings(
            Configuration.parseAll("sqlite-full,postgres-2"),
            List.of(16),
            128,
            100,
            32,
            1,
            Duration.ofSeconds(10),
            "256m",
            Optional.empty());

    ReplicaSettings {
        configurations = List.copyOf(requireNonNull(configurations, "configurations is null"));
        clientCounts = List.copyOf(requireNonNull(clientCounts, "clientCounts is null"));
        requireNonNull(phaseLimit, "phaseLimit is null");
        requireNonNull(gatewayHeap, "gatewayHeap is null");
        requireNonNull(output, "output is null");
        if (configurations.isEmpty()) {
            throw new IllegalArgumentException("--configs: name at least one");
        }
        if (clientCounts.isEmpty() || clientCounts.stream().anyMatch(c -> c < 1 || c > 1024)) {
            throw new IllegalArgumentException("--clients: each level must be between 1 and 1024");
        }
        if (callsPerPhase < 1 || storedSandboxes < 0 || warmupCalls < 0 || storedSandboxes > 1_000_000) {
            throw new IllegalArgumentException(
                    "--calls must be positive, --stored 0 to 1000000, --warmup not negative");
        }
        if (rounds < 1 || rounds > 10) {
            throw new IllegalArgumentException("--rounds must be 1 to 10");
        }
        if (!gatewayHeap.matches("[1-9][0-9]{0,5}[mg]")) {
            throw new IllegalArgumentException("--gateway-heap must be like 256m or 1g, got '" + gatewayHeap + "'");
        }
    }

    /** How many calls each of {@code clients} clients makes in one phase. */
    int callsPerClient(int clients) {
        return Math.ceilDiv(callsPerPhase, clients);
    }

    static ReplicaSettings parse(String... args) {
        BenchmarkOptions options = BenchmarkOptions.parse(
                args,
                Set.of(
                        "--configs",
                        "--clients",
                        "--calls",
                        "--stored",
                        "--warmup",
                        "--rounds",
                        "--phase-limit",
                        "--gateway-heap",
                        "--output"),
                Set.of("--smoke"));
        ReplicaSettings base = options.has("--smoke") ? SMOKE : FULL;
        return new ReplicaSettings(
                options.string("--configs").map(Configuration::parseAll).orElse(base.configurations),
                options.integers("--clients", base.clientCounts),
                options.integer("--calls", base.callsPerPhase),
                options.integer("--stored", base.storedSandboxes),
                options.integer("--warmup", base.warmupCalls),
                options.integer("--rounds", base.rounds),
                options.seconds("--phase-limit", base.phaseLimit),
                options.string("--gateway-heap").orElse(base.gatewayHeap),
                options.path("--output"));
    }

    /**
     * One store configuration.
     *
     * @param name as given on the command line
     * @param replicas gateway processes sharing the store (more than one only on PostgreSQL)
     * @param postgres whether the store is PostgreSQL (else SQLite, in the one replica's data directory)
     * @param synchronous SQLite's synchronous mode, NORMAL or FULL (n/a on PostgreSQL)
     */
    record Configuration(String name, int replicas, boolean postgres, String synchronous) {
        private static final Pattern POSTGRES = Pattern.compile("postgres(?:-([1-9][0-9]?))?");

        static Configuration parse(String text) {
            String name = text.trim().toLowerCase(Locale.ROOT);
            if (name.equals("sqlite")) {
                return new Configuration(name, 1, false, "NORMAL");
            }
            if (name.equals("sqlite-full")) {
                return new Configuration(name, 1, false, "FULL");
            }
            Matcher postgres = POSTGRES.matcher(name);
            if (postgres.matches()) {
                int replicas = postgres.group(1) == null ? 1 : Integer.parseInt(postgres.group(1));
                if (replicas > 16) {
                    throw new IllegalArgumentException("--configs: at most 16 replicas, got " + name);
                }
                return new Configuration(name, replicas, true, "n/a");
            }
            throw new IllegalArgumentException(
                    "--configs: each is sqlite, sqlite-full, postgres or postgres-N, got '" + text.trim() + "'");
        }

        @SuppressWarnings("StringSplitter") // a trailing comma is tolerated, as String.split does
        static List<Configuration> parseAll(String text) {
            List<Configuration> configurations = new ArrayList<>();
            for (String name : text.split(",")) {
                configurations.add(parse(name));
            }
            return List.copyOf(configurations);
        }

        /** What the report calls its store. */
        String store() {
            return postgres ? "PostgreSQL" : "SQLite, synchronous=" + synchronous;
        }
    }
}
