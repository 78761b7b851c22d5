package dev.sandgate.benchmarks;

import dev.sandgate.benchmarks.ReplicaSettings.Configuration;
import dev.sandgate.testing.GatewayProcess;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * The load benchmark across store configurations: SQLite (synchronous NORMAL and FULL) and PostgreSQL with one or
 * several replicas. Each configuration gets a fresh store (a new SQLite file; a new schema of the PostgreSQL database,
 * dropped after it) and gateway processes of its own, each a JVM started as {@code bin/sandgate-gateway} is (reference
 * driver on one shared directory in shared memory, one shared token key file, as docs/operations.md "Several replicas"
 * has it). Clients are spread round-robin over the replicas. For each number of clients it measures a gRPC health
 * check (a bare unary call on the same servers: the floor) and create, stop, start and delete over distinct sandboxes,
 * each with a fresh {@code request_id}. Prints a markdown table, one row per configuration and level.
 */
public final class ReplicaBenchmark {
    private static final String WORKSPACE = "bench";
    private static final String STORED_WORKSPACE = "bench-stored";
    private static final int PREPOPULATE_CLIENTS = 16;

    /**
     * One configuration at one level; latencies in milliseconds.
     *
     * @param opP50 the p50 of create, stop, start and delete, in that order
     * @param gatewayCpuMillisPerCall the gateway processes' CPU (all replicas, not PostgreSQL's) per lifecycle call
     * @param errors failed calls, floor and lifecycle
     */
    record Row(
            int round,
            Configuration configuration,
            int clients,
            double floorOpsPerSecond,
            double floorP50,
            double floorP99,
            double opsPerSecond,
            double p50,
            double p99,
            List<Double> opP50,
            double gatewayCpuMillisPerCall,
            long errors,
            String firstError) {}

    private final ReplicaSettings settings;
    private final List<LifecycleClient> lifecycles;
    private final List<HealthGrpc.HealthBlockingStub> health;

    private ReplicaBenchmark(ReplicaSettings settings, List<ManagedChannel> channels) {
        this.settings = settings;
        this.lifecycles = channels.stream()
                .map(channel -> new LifecycleClient(channel, Duration.ofSeconds(30), "busybox"))
                .toList();
        this.health = channels.stream().map(HealthGrpc::newBlockingStub).toList();
    }

    public static void main(String[] args) throws Exception {
        ReplicaSettings settings = BenchmarkOptions.settingsOrExit(args, ReplicaSettings.USAGE, ReplicaSettings::parse);
        if (System.getProperty("logback.configurationFile") == null) {
            // The clients' own logging (gRPC, Netty) to a file, as the gateway's: the console keeps only the report.
            Path log = Files.createTempFile("sandgate-bench-replicas-clients-", ".log");
            log.toFile().deleteOnExit();
            System.setProperty("sandgate.bench.log", log.toString());
            System.setProperty("logback.configurationFile", "sandgate-bench-logback.xml");
        }
        String loadBefore = loadAverage();
        List<Row> rows = run(settings);
        String markdown = markdown(settings, rows, loadBefore, loadAverage());
        System.out.print(markdown);
        if (settings.output().isPresent()) {
            Files.writeString(settings.output().get(), markdown, StandardCharsets.UTF_8);
        }
        System.exit(rows.stream().anyMatch(row -> row.errors() > 0) ? 1 : 0);
    }

    /** Measures every configuration, in turn, each round. */
    static List<Row> run(ReplicaSettings settings) throws IOException, InterruptedException, SQLException {
        Optional<Postgres> postgres = settings.configurations().stream().anyMatch(Configuration::postgres)
                ? Optional.of(Postgres.fromEnvironment())
                : Optional.empty();
        List<Row> rows = new ArrayList<>();
        for (int round = 1; round <= settings.rounds(); round++) {
            for (Configuration configuration : settings.configurations()) {
                progress("round " + round + ", " + configuration.name());
                rows.addAll(measure(settings, round, configuration, postgres));
            }
        }
        return rows;
    }

    private static List<Row> measure(
            ReplicaSettings settings, int round, Configuration configuration, Optional<Postgres> postgres)
            throws IOException, InterruptedException, SQLException {
        Path work = Files.createTempDirectory("sandgate-bench-replicas-");
        Path shm = Path.of("/dev/shm");
        Path driverDirectory = Files.isDirectory(shm) && Files.isWritable(shm)
                ? Files.createTempDirectory(shm, "sandgate-bench-reference-")
                : Files.createDirectories(work.resolve("reference-sandboxes"));
        String schema = "sandgate_bench_"
                + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
        if (configuration.postgres()) {
            postgres.orElseThrow().execute("CREATE SCHEMA " + schema);
        }
        List<GatewayProcess> gateways = new ArrayList<>();
        List<ManagedChannel> channels = new ArrayList<>();
        boolean failed = true;
        try {
            List<String> options = gatewayOptions(configuration, work, driverDirectory, postgres, schema);
            for (int replica = 0; replica < configuration.replicas(); replica++) {
                // One after the other: the first creates the token key file that the others then read.
                gateways.add(gateway(work, "replica-" + replica, settings, options));
            }
            for (GatewayProcess gateway : gateways) {
                channels.add(NettyChannelBuilder.forTarget(gateway.address())
                        .usePlaintext()
                        .build());
            }
            List<Row> rows = new ReplicaBenchmark(settings, channels).measure(round, configuration, gateways);
            failed = rows.stream().anyMatch(row -> row.errors() > 0);
            return rows;
        } finally {
            for (ManagedChannel channel : channels) {
                channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
            for (GatewayProcess gateway : gateways) {
                gateway.close();
            }
            if (configuration.postgres()) {
                postgres.orElseThrow().execute("DROP SCHEMA " + schema + " CASCADE");
            }
            if (failed) {
                Path kept = Files.createTempDirectory("sandgate-bench-replicas-failed-");
                for (int replica = 0; replica < gateways.size(); replica++) {
                    for (String suffix : List.of(".log", ".gateway.log")) {
                        Path file = work.resolve("replica-" + replica + suffix);
                        if (Files.exists(file)) {
                            Files.copy(file, kept.resolve(file.getFileName()));
                        }
                    }
                }
                progress("calls failed or a gateway did not start: its logs are kept in " + kept);
            }
            Trees.delete(work);
            Trees.delete(driverDirectory);
        }
    }

    private static List<String> gatewayOptions(
            Configuration configuration, Path work, Path driverDirectory, Optional<Postgres> postgres, String schema) {
        List<String> options = new ArrayList<>(List.of(
                "--driver",
                "reference",
                "--driver-property",
                "reference.directory=" + driverDirectory,
                "--driver-property",
                "reference.watch-interval=1000ms",
                "--token-key-file",
                work.resolve("token-keys.properties").toString()));
        if (configuration.postgres()) {
            Postgres database = postgres.orElseThrow();
            options.addAll(List.of("--store-url", database.url(schema), "--store-user", database.user()));
            database.passwordFile().ifPresent(file -> options.addAll(List.of("--store-password-file", file)));
        } else {
            options.addAll(List.of("--store-synchronous", configuration.synchronous()));
        }
        return options;
    }

    /**
     * Starts a gateway in a JVM of its own as {@code bin/sandgate-gateway} starts it ({@code GatewayMain} on this JVM's
     * class path) over the data directory {@code work/name}; its output goes to {@code name.log} and its log to {@code
     * name.gateway.log} in {@code work}.
     */
    private static GatewayProcess gateway(Path work, String name, ReplicaSettings settings, List<String> options)
            throws IOException, InterruptedException {
        Path dataDirectory = Files.createDirectories(work.resolve(name));
        List<String> jvmOptions = new ArrayList<>(gatewayJvmOptions(settings));
        jvmOptions.add("-Dlogback.configurationFile=sandgate-bench-logback.xml");
        jvmOptions.add("-Dsandgate.bench.log=" + work.resolve(name + ".gateway.log"));
        List<String> arguments = new ArrayList<>(List.of("--data-dir", dataDirectory.toString()));
        arguments.addAll(options);
        return GatewayProcess.startWithOnly(
                work,
                name,
                System.getProperty("java.class.path"),
                "dev.sandgate.gateway.server.GatewayMain",
                jvmOptions,
                arguments);
    }

    /** The JVM options of scripts/bench (and docs/operations.md), with the gateway's heap. */
    private static List<String> gatewayJvmOptions(ReplicaSettings settings) {
        List<String> options = new ArrayList<>(List.of(
                "-Xmx" + settings.gatewayHeap(),
                "-Xms" + settings.gatewayHeap(),
                "-XX:MaxTenuringThreshold=1",
                "-XX:-ClassUnloadingWithConcurrentMark",
                "-XX:G1HeapWastePercent=25",
                "--enable-native-access=ALL-UNNAMED"));
        if (Runtime.version().feature() >= 23) {
            options.add("--sun-misc-unsafe-memory-access=allow");
        }
        return options;
    }

    private List<Row> measure(int round, Configuration configuration, List<GatewayProcess> gateways)
            throws InterruptedException {
        int storedPerClient = Math.ceilDiv(settings.storedSandboxes(), PREPOPULATE_CLIENTS);
        if (settings.storedSandboxes() > 0) {
            progress("storing " + settings.storedSandboxes() + " sandboxes");
            ClosedLoop.Outcome stored =
                    ClosedLoop.run(PREPOPULATE_CLIENTS, storedPerClient, Duration.ofMinutes(10), (client, index) -> {
                        int number = client * storedPerClient + index;
                        if (number < settings.storedSandboxes()) {
                            lifecycle(client).create(STORED_WORKSPACE, "stored-" + number);
                        }
                    });
            if (stored.errors() > 0) {
                throw new IllegalStateException("storing sandboxes: " + stored.errors()
                        + " calls failed, the first with " + stored.firstError());
            }
        }
        if (settings.warmupCalls() > 0) {
            progress("warming up");
            lifecycle("warmup", PREPOPULATE_CLIENTS, Math.ceilDiv(settings.warmupCalls(), PREPOPULATE_CLIENTS));
            ClosedLoop.run(
                    PREPOPULATE_CLIENTS,
                    Math.ceilDiv(settings.warmupCalls(), PREPOPULATE_CLIENTS),
                    settings.phaseLimit(),
                    (c, i) -> check(c));
        }
        List<Row> rows = new ArrayList<>();
        for (int clients : settings.clientCounts()) {
            progress(configuration.name() + ", " + clients + " clients");
            int perClient = settings.callsPerClient(clients);
            ClosedLoop.Outcome floor = ClosedLoop.run(clients, perClient, settings.phaseLimit(), (c, i) -> check(c));
            long cpuBefore = cpuNanos(gateways);
            List<ClosedLoop.Outcome> phases = lifecycle("c" + clients, clients, perClient);
            long cpuAfter = cpuNanos(gateways);
            ClosedLoop.Outcome all = GatewayBenchmark.merge(phases);
            long calls = all.latencies().count() + all.errors();
            double cpuPerCall =
                    cpuBefore < 0 || cpuAfter < 0 || calls == 0 ? Double.NaN : (cpuAfter - cpuBefore) / 1e6 / calls;
            String firstError = floor.firstError() != null ? floor.firstError() : all.firstError();
            if (firstError != null) {
                progress(configuration.name() + ", " + clients + " clients: " + (floor.errors() + all.errors())
                        + " calls failed, the first with " + firstError);
            }
            rows.add(new Row(
                    round,
                    configuration,
                    clients,
                    floor.throughputPerSecond(),
                    floor.latencies().percentileMillis(50),
                    floor.latencies().percentileMillis(99),
                    all.throughputPerSecond(),
                    all.latencies().percentileMillis(50),
                    all.latencies().percentileMillis(99),
                    phases.stream()
                            .map(phase -> phase.latencies().percentileMillis(50))
                            .toList(),
                    cpuPerCall,
                    floor.errors() + all.errors(),
                    firstError == null ? "" : firstError));
        }
        return rows;
    }

    /**
     * Client {@code c} creates its own {@code perClient} sandboxes through replica {@code c mod replicas}, then stops,
     * starts and deletes each of them through the same replica: a phase per operation.
     */
    private List<ClosedLoop.Outcome> lifecycle(String prefix, int clients, int perClient) throws InterruptedException {
        String[][] ids = new String[clients][perClient];
        List<ClosedLoop.Outcome> phases = new ArrayList<>();
        Duration limit = settings.phaseLimit();
        phases.add(ClosedLoop.run(
                clients,
                perClient,
                limit,
                (c, i) -> ids[c][i] = lifecycle(c).create(WORKSPACE, prefix + "-" + c + "-" + i)));
        phases.add(
                ClosedLoop.run(clients, perClient, limit, (c, i) -> lifecycle(c).stop(created(ids[c][i]))));
        phases.add(
                ClosedLoop.run(clients, perClient, limit, (c, i) -> lifecycle(c).start(created(ids[c][i]))));
        phases.add(
                ClosedLoop.run(clients, perClient, limit, (c, i) -> lifecycle(c).delete(created(ids[c][i]))));
        return phases;
    }

    private LifecycleClient lifecycle(int client) {
        return lifecycles.get(client % lifecycles.size());
    }

    private void check(int client) {
        health.get(client % health.size())
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .check(HealthCheckRequest.getDefaultInstance());
    }

    private static String created(String id) {
        if (id == null) {
            throw new IllegalStateException("its create failed or did not run before the phase limit");
        }
        return id;
    }

    private static long cpuNanos(List<GatewayProcess> gateways) {
        long sum = 0;
        for (GatewayProcess gateway : gateways) {
            long cpu = gateway.cpuNanos();
            if (cpu < 0) {
                return -1;
            }
            sum += cpu;
        }
        return sum;
    }

    static String markdown(ReplicaSettings settings, List<Row> rows, String loadBefore, String loadAfter) {
        var text = new StringBuilder();
        text.append(String.format(
                Locale.ROOT,
                "Store configurations, %d processors, %s; gateways: one JVM each, -Xmx%s, reference driver on one"
                        + " directory in shared memory; %,d sandboxes stored; %,d calls per operation and level;"
                        + " load average before %s, after %s%n%n",
                Runtime.getRuntime().availableProcessors(),
                System.getProperty("java.vm.name") + " " + Runtime.version(),
                settings.gatewayHeap(),
                settings.storedSandboxes(),
                settings.callsPerPhase(),
                loadBefore,
                loadAfter));
        text.append("| round | configuration | store | replicas | clients | floor ops/s | floor p50 ms | floor p99 ms"
                + " | lifecycle ops/s | p50 ms | p99 ms | p50 create / stop / start / delete ms | ops/s / first"
                + " configuration | p50 / floor p50 | gateway CPU ms / call | errors |\n");
        text.append("|--:|:--|:--|--:|--:|--:|--:|--:|--:|--:|--:|:--|--:|--:|--:|--:|\n");
        for (Row row : rows) {
            Row first = rows.stream()
                    .filter(other -> other.round() == row.round() && other.clients() == row.clients())
                    .findFirst()
                    .orElse(row);
            text.append(String.format(
                    Locale.ROOT,
                    "| %d | %s | %s | %d | %d | %,.0f | %.2f | %.2f | %,.0f | %.2f | %.2f | %s | %.2f | %.2f | %.3f"
                            + " | %d |%n",
                    row.round(),
                    row.configuration().name(),
                    row.configuration().store(),
                    row.configuration().replicas(),
                    row.clients(),
                    row.floorOpsPerSecond(),
                    row.floorP50(),
                    row.floorP99(),
                    row.opsPerSecond(),
                    row.p50(),
                    row.p99(),
                    String.join(
                            " / ",
                            row.opP50().stream()
                                    .map(p -> String.format(Locale.ROOT, "%.2f", p))
                                    .toList()),
                    row.opsPerSecond() / first.opsPerSecond(),
                    row.p50() / row.floorP50(),
                    row.gatewayCpuMillisPerCall(),
                    row.errors()));
        }
        return text.toString();
    }

    /** The 1, 5 and 15 minute load averages, or "?" where the machine does not tell. */
    @SuppressWarnings("StringSplitter") // /proc/loadavg is one line of fields separated by single spaces
    static String loadAverage() {
        try {
            String[] fields = Files.readString(Path.of("/proc/loadavg")).split(" ");
            return fields[0] + " " + fields[1] + " " + fields[2];
        } catch (IOException | RuntimeException e) {
            return "?";
        }
    }

    /** The PostgreSQL of SANDGATE_POSTGRES_URL, _USER and _PASSWORD_FILE, in which each run makes its own schema. */
    record Postgres(String baseUrl, String user, Optional<String> passwordFile) {
        static Postgres fromEnvironment() {
            String url = System.getenv("SANDGATE_POSTGRES_URL");
            String user = System.getenv("SANDGATE_POSTGRES_USER");
            if (url == null || url.isBlank() || user == null || user.isBlank()) {
                throw new IllegalArgumentException("a postgres configuration needs SANDGATE_POSTGRES_URL and"
                        + " SANDGATE_POSTGRES_USER (and SANDGATE_POSTGRES_PASSWORD_FILE): see"
                        + " scripts/engines/postgres.sh");
            }
            return new Postgres(url, user, Optional.ofNullable(System.getenv("SANDGATE_POSTGRES_PASSWORD_FILE")));
        }

        /** The store URL of a schema of this database. */
        String url(String schema) {
            return baseUrl + (baseUrl.contains("?") ? "&" : "?") + "currentSchema=" + schema;
        }

        void execute(String sql) throws SQLException, IOException {
            String password = passwordFile.isPresent()
                    ? Files.readString(Path.of(passwordFile.get()), StandardCharsets.UTF_8)
                            .strip()
                    : null;
            try (Connection connection = DriverManager.getConnection(baseUrl, user, password);
                    Statement statement = connection.createStatement()) {
                statement.execute(sql);
            }
        }
    }

    private static void progress(String message) {
        System.err.println("[bench] " + message);
    }
}
