package dev.sandgate.benchmarks;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.ListSandboxesResponse;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.SandboxServiceGrpc.SandboxServiceBlockingStub;
import dev.sandgate.api.v1.SandboxSpec;
import dev.sandgate.api.v1.SandboxTarget;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The stored-sandboxes benchmark: how the gateway copes with many sandboxes in its store. For each count it fills a
 * fresh SQLite store and reference-driver directory directly (a generator, not the API), then starts a gateway in this
 * JVM on them and measures its start-up until it serves, the CPU it spends in the seconds after (reconciliation), its
 * live heap, GetSandbox latency at 1 and 64 clients, and the cost of each page when listing every sandbox. Prints a
 * markdown table.
 *
 * <p>The generator creates one sandbox through a gateway (so that every column and file has the format the gateway
 * and the driver write), then copies its store rows (sandbox, labels, policy revision) with a new id and name each, in
 * SQL, and its runtime resource's files with the new id and name stamped: the reference driver then finds every
 * stored sandbox present, and the reconciler has nothing to repair.
 */
public final class StoredBenchmark {
    static final String USAGE = """
            Usage: StoredBenchmark [--counts 10000,100000,1000000] [--calls 4000] [--quiet-seconds 10] [--smoke]
                                   [--restarts 3] [--directory DIR]
              --counts         comma-separated numbers of stored sandboxes, one gateway start each
              --restarts       after a count's measurements, start a gateway on the same store this many times
                               more (each closed once it serves): the median, lowest and highest time until ready
              --calls          GetSandbox calls per measured phase (1 and 64 clients)
              --quiet-seconds  how long the CPU is measured after the gateway is ready (reconciliation)
              --directory      where the store and the driver's files are generated (default: a temporary folder)
              --smoke          1000,5000 sandboxes, 400 calls, 2 s, 1 restart: a check that the tool works
            """;

    static final String WORKSPACE = "bench-stored";
    private static final String DATABASE_FILE = "sandgate.db";
    private static final int PAGE_SIZE = 1000;
    private static final int BATCH = 10_000;
    private static final Pattern BACKEND_ID = Pattern.compile("(?m)^backend-id=(.*)$");

    record Settings(List<Integer> counts, int calls, int quietSeconds, int restarts, Path directory) {
        static Settings parse(String... args) {
            BenchmarkOptions options = BenchmarkOptions.parse(
                    args,
                    Set.of("--counts", "--calls", "--quiet-seconds", "--restarts", "--directory"),
                    Set.of("--smoke"));
            boolean smoke = options.has("--smoke");
            List<Integer> counts =
                    options.integers("--counts", smoke ? List.of(1000, 5000) : List.of(10_000, 100_000, 1_000_000));
            int calls = options.integer("--calls", smoke ? 400 : 4000);
            int quietSeconds = options.integer("--quiet-seconds", smoke ? 2 : 10);
            int restarts = options.integer("--restarts", smoke ? 1 : 3, 0, 50);
            if (counts.isEmpty() || counts.stream().anyMatch(n -> n < 1 || n > 9_999_999)) {
                throw new IllegalArgumentException("--counts: each between 1 and 9999999");
            }
            if (calls < 64 || quietSeconds < 1) {
                throw new IllegalArgumentException("--calls at least 64, --quiet-seconds at least 1");
            }
            return new Settings(
                    counts,
                    calls,
                    quietSeconds,
                    restarts,
                    options.path("--directory").orElse(null));
        }
    }

    /**
     * One count's figures; times in milliseconds unless named otherwise.
     *
     * @param startCpuSeconds the CPU time this process spent from the start until ready
     * @param restartSeconds the times until ready of the later starts on the same store, in the order measured
     * @param quietCpuSeconds the CPU time this process spent in the quiet seconds after ready, idle
     * @param heapMiB the live heap after a full collection at the end of that quiet time
     * @param pages how many pages of {@value #PAGE_SIZE} listing every sandbox took; {@code listed} the sandboxes
     * @param notReady the sandboxes listed in another phase than READY: the reconciler changed them (all are generated
     *     READY with their runtime resource present)
     */
    record Row(
            int stored,
            double generateSeconds,
            double startSeconds,
            double startCpuSeconds,
            List<Double> restartSeconds,
            double quietCpuSeconds,
            double heapMiB,
            double get1P50,
            double get1P99,
            double get64P50,
            double get64P99,
            long getErrors,
            double firstPage,
            double middlePage,
            double lastPage,
            int pages,
            long listed,
            long notReady,
            String reconciled) {}

    public static void main(String[] args) throws Exception {
        Settings settings = BenchmarkOptions.settingsOrExit(args, USAGE, Settings::parse);
        List<Row> rows = run(settings);
        System.out.print(markdown(settings, rows));
        System.exit(
                rows.stream().anyMatch(r -> r.getErrors() > 0 || r.listed() != r.stored() || r.notReady() > 0) ? 1 : 0);
    }

    static List<Row> run(Settings settings) throws Exception {
        Path root = settings.directory() == null
                ? Files.createTempDirectory("sandgate-bench-stored-")
                : Files.createDirectories(settings.directory());
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("sandgate.bench.log", root.resolve("gateway.log").toString());
            System.setProperty("logback.configurationFile", "sandgate-bench-logback.xml");
        }
        List<Row> rows = new ArrayList<>();
        try {
            for (int count : settings.counts()) {
                Path work = Files.createTempDirectory(root, "n" + count + "-");
                try {
                    Row row = measure(settings, count, work);
                    rows.add(row);
                    progress("measured: "
                            + markdown(settings, List.of(row)).lines().toList().getLast());
                } finally {
                    progress("removing " + work);
                    Trees.delete(work);
                }
            }
        } finally {
            if (settings.directory() == null) {
                Trees.delete(root);
            }
        }
        return rows;
    }

    private static Row measure(Settings settings, int count, Path work) throws Exception {
        Path data = work.resolve("data");
        Path driver = work.resolve("reference");
        progress(count + " sandboxes: generating");
        long generateStart = System.nanoTime();
        generate(data, driver, count);
        double generateSeconds = (System.nanoTime() - generateStart) / 1e9;

        progress(count + " sandboxes: starting the gateway");
        Path log = logFile();
        long logBefore = log != null && Files.exists(log) ? Files.size(log) : 0;
        System.gc();
        long cpuBefore = ClosedLoop.processCpuNanos();
        long startBegin = System.nanoTime();
        Row row;
        try (BenchGateway gateway = BenchGateway.start(data, driver, Duration.ofSeconds(1), "NORMAL")) {
            ManagedChannel channel = loopbackChannel(gateway.port());
            try {
                SandboxServiceBlockingStub stub = SandboxServiceGrpc.newBlockingStub(channel);
                get(stub, 0);
                double startSeconds = (System.nanoTime() - startBegin) / 1e9;
                long cpuReady = ClosedLoop.processCpuNanos();
                String reconciled = reconciled(log, logBefore);
                progress(count + " sandboxes: ready after " + format(startSeconds) + " s; quiet for "
                        + settings.quietSeconds() + " s");
                Thread.sleep(settings.quietSeconds() * 1000L);
                long cpuQuiet = ClosedLoop.processCpuNanos();
                double heapMiB = liveHeapMiB();

                progress(count + " sandboxes: GetSandbox");
                getPhase(stub, count, 4, Math.min(settings.calls(), 500)); // warm-up, not reported
                ClosedLoop.Outcome one = getPhase(stub, count, 1, settings.calls());
                ClosedLoop.Outcome many = getPhase(stub, count, 64, settings.calls());

                progress(count + " sandboxes: listing every page");
                List<Long> pageNanos = new ArrayList<>();
                long listed = 0;
                long notReady = 0;
                String token = "";
                do {
                    long begin = System.nanoTime();
                    ListSandboxesResponse page = stub.withDeadlineAfter(60, TimeUnit.SECONDS)
                            .listSandboxes(ListSandboxesRequest.newBuilder()
                                    .setWorkspace(WORKSPACE)
                                    .setPageSize(PAGE_SIZE)
                                    .setPageToken(token)
                                    .build());
                    pageNanos.add(System.nanoTime() - begin);
                    listed += page.getSandboxesCount();
                    notReady += page.getSandboxesList().stream()
                            .filter(sandbox -> sandbox.getPhase() != Phase.READY)
                            .count();
                    token = page.getNextPageToken();
                } while (!token.isEmpty());

                Latencies oneLatencies = one.latencies();
                Latencies manyLatencies = many.latencies();
                row = new Row(
                        count,
                        generateSeconds,
                        startSeconds,
                        seconds(cpuReady - cpuBefore),
                        List.of(),
                        seconds(cpuQuiet - cpuReady),
                        heapMiB,
                        oneLatencies.percentileMillis(50),
                        oneLatencies.percentileMillis(99),
                        manyLatencies.percentileMillis(50),
                        manyLatencies.percentileMillis(99),
                        one.errors() + many.errors(),
                        pageNanos.getFirst() / 1e6,
                        pageNanos.get(pageNanos.size() / 2) / 1e6,
                        pageNanos.getLast() / 1e6,
                        pageNanos.size(),
                        listed,
                        notReady,
                        reconciled);
            } finally {
                channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
        }
        List<Double> restarts = new ArrayList<>();
        for (int i = 0; i < settings.restarts(); i++) {
            restarts.add(restart(data, driver));
            progress(count + " sandboxes: restart " + (i + 1) + " ready after " + format(restarts.getLast()) + " s");
        }
        return new Row(
                row.stored(),
                row.generateSeconds(),
                row.startSeconds(),
                row.startCpuSeconds(),
                List.copyOf(restarts),
                row.quietCpuSeconds(),
                row.heapMiB(),
                row.get1P50(),
                row.get1P99(),
                row.get64P50(),
                row.get64P99(),
                row.getErrors(),
                row.firstPage(),
                row.middlePage(),
                row.lastPage(),
                row.pages(),
                row.listed(),
                row.notReady(),
                row.reconciled());
    }

    /** A plaintext channel to the gateway's port on loopback. */
    private static ManagedChannel loopbackChannel(int port) {
        return NettyChannelBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), port))
                .usePlaintext()
                .build();
    }

    /** Starts a gateway on the store and driver directory again; returns the seconds until it served a GetSandbox. */
    private static double restart(Path data, Path driver) throws Exception {
        System.gc();
        long begin = System.nanoTime();
        try (BenchGateway gateway = BenchGateway.start(data, driver, Duration.ofSeconds(1), "NORMAL")) {
            ManagedChannel channel = loopbackChannel(gateway.port());
            try {
                get(SandboxServiceGrpc.newBlockingStub(channel), 0);
                return (System.nanoTime() - begin) / 1e9;
            } finally {
                channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
        }
    }

    private static Path logFile() {
        String log = System.getProperty("sandgate.bench.log");
        return log == null ? null : Path.of(log);
    }

    /** Whether the gateway's log, from {@code offset} on, says that the start-up reconciliation was skipped. */
    private static String reconciled(Path log, long offset) throws IOException {
        if (log == null || !Files.exists(log)) {
            return "?";
        }
        try (var channel = Files.newByteChannel(log)) {
            channel.position(offset);
            String text = new String(Channels.newInputStream(channel).readAllBytes(), StandardCharsets.UTF_8);
            return text.contains("cannot list the driver's runtime resources") ? "no" : "yes";
        }
    }

    private static ClosedLoop.Outcome getPhase(SandboxServiceBlockingStub stub, int count, int clients, int calls)
            throws InterruptedException {
        ClosedLoop.Outcome outcome = ClosedLoop.run(
                clients,
                Math.ceilDiv(calls, clients),
                Duration.ofMinutes(5),
                (client, index) -> get(stub, ThreadLocalRandom.current().nextInt(count)));
        if (outcome.errors() > 0) {
            progress("GetSandbox at " + clients + " clients: " + outcome.errors() + " calls failed, the first with "
                    + outcome.firstError());
        }
        return outcome;
    }

    private static void get(SandboxServiceBlockingStub stub, int number) {
        String id = stub.withDeadlineAfter(30, TimeUnit.SECONDS)
                .getSandbox(GetSandboxRequest.newBuilder()
                        .setTarget(SandboxTarget.newBuilder().setId(sandboxId(number)))
                        .build())
                .getSandbox()
                .getId();
        if (!id.equals(sandboxId(number))) {
            throw new IllegalStateException("asked for " + sandboxId(number) + ", got " + id);
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // The generator

    /** The id of generated sandbox {@code number}: a UUID, as the gateway gives, of fixed width. */
    static String sandboxId(int number) {
        return String.format(Locale.ROOT, "5a000000-0000-4000-8000-%012d", number);
    }

    static String sandboxName(int number) {
        return String.format(Locale.ROOT, "s-%07d", number);
    }

    /**
     * Fills the data directory {@code data} and the reference driver's directory {@code driver} with {@code count}
     * READY sandboxes of the workspace {@value #WORKSPACE}, numbered from 0 ({@link #sandboxId}, {@link
     * #sandboxName}), each with one user label and one policy revision, and its runtime resource.
     */
    static void generate(Path data, Path driver, int count) throws IOException, SQLException, InterruptedException {
        String templateId;
        try (BenchGateway gateway = BenchGateway.start(data, driver, Duration.ofSeconds(1), "NORMAL")) {
            ManagedChannel channel = loopbackChannel(gateway.port());
            try {
                var sandbox = SandboxServiceGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(30, TimeUnit.SECONDS)
                        .createSandbox(CreateSandboxRequest.newBuilder()
                                .setRequestId(UUID.randomUUID().toString())
                                .setWorkspace(WORKSPACE)
                                .setName(sandboxName(0))
                                .setSpec(SandboxSpec.newBuilder()
                                        .setImage("busybox")
                                        .addArgs("sleep")
                                        .addArgs("3600"))
                                .putLabels("tier", "bench")
                                .setWaitUntilReady(true)
                                .build())
                        .getSandbox();
                if (sandbox.getPhase() != Phase.READY) {
                    throw new IllegalStateException("the template sandbox is " + sandbox.getPhase() + ", not READY");
                }
                templateId = sandbox.getId();
            } finally {
                channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
        }
        try (Connection db = DriverManager.getConnection("jdbc:sqlite:" + data.resolve(DATABASE_FILE))) {
            String gatewayId = copyRows(db, templateId, count);
            copyResources(driver.resolve(gatewayId).resolve("sandboxes"), templateId, count);
        }
    }

    /** Copies the template's rows to sandboxes 0 to count - 1 (0 replaces the template); returns the gateway id. */
    private static String copyRows(Connection db, String templateId, int count) throws SQLException {
        String gatewayId;
        try (Statement s = db.createStatement()) {
            s.execute("PRAGMA synchronous = OFF");
            s.execute("PRAGMA foreign_keys = ON");
            try (ResultSet rs = s.executeQuery("SELECT meta_value FROM gateway_meta WHERE meta_key = 'gateway_id'")) {
                if (!rs.next()) {
                    throw new IllegalStateException("the store has no gateway id");
                }
                gatewayId = rs.getString(1);
            }
            // the template's request record names it; the copies have none, as after the records were pruned
            s.execute("DELETE FROM request");
        }
        List<String> columns = new ArrayList<>();
        try (Statement s = db.createStatement();
                ResultSet rs = s.executeQuery("SELECT name FROM pragma_table_info('sandbox') ORDER BY cid")) {
            while (rs.next()) {
                columns.add(rs.getString(1));
            }
        }
        String others = String.join(
                ", ",
                columns.stream()
                        .filter(c -> !c.equals("id") && !c.equals("name"))
                        .toList());
        String copySandbox =
                "INSERT INTO sandbox (id, name, " + others + ") SELECT ?, ?, " + others + " FROM sandbox WHERE id = ?";
        String copyLabels = "INSERT INTO sandbox_label (sandbox_id, label_key, label_value)"
                + " SELECT ?, label_key, label_value FROM sandbox_label WHERE sandbox_id = ?";
        String copyRevisions = "INSERT INTO policy_revision (sandbox_id, revision, digest, document, admit_ms)"
                + " SELECT ?, revision, digest, document, admit_ms FROM policy_revision WHERE sandbox_id = ?";
        String template = "template-" + templateId;
        db.setAutoCommit(false);
        try (Statement s = db.createStatement()) {
            // out of the way of the generated names; removed at the end
            s.executeUpdate("UPDATE sandbox SET name = 'template' WHERE id = '" + templateId + "'");
        }
        db.commit();
        try (PreparedStatement sandbox = db.prepareStatement(copySandbox);
                PreparedStatement labels = db.prepareStatement(copyLabels);
                PreparedStatement revisions = db.prepareStatement(copyRevisions)) {
            for (int number = 0; number < count; number++) {
                String id = sandboxId(number);
                sandbox.setString(1, id);
                sandbox.setString(2, sandboxName(number));
                sandbox.setString(3, templateId);
                sandbox.addBatch();
                labels.setString(1, id);
                labels.setString(2, templateId);
                labels.addBatch();
                revisions.setString(1, id);
                revisions.setString(2, templateId);
                revisions.addBatch();
                if ((number + 1) % BATCH == 0 || number == count - 1) {
                    sandbox.executeBatch();
                    labels.executeBatch();
                    revisions.executeBatch();
                    db.commit();
                }
            }
        }
        try (Statement s = db.createStatement()) {
            s.executeUpdate("DELETE FROM sandbox WHERE id = '" + templateId + "'");
        }
        db.commit();
        db.setAutoCommit(true);
        try (Statement s = db.createStatement()) {
            s.execute("PRAGMA wal_checkpoint(TRUNCATE)");
            s.execute("ANALYZE");
        }
        progress("copied the rows of " + template + " " + count + " times");
        return gatewayId;
    }

    /**
     * Copies the template's runtime resource folder to every generated sandbox, with its id and name stamped, and
     * writes the backend's name index entry of each (the layout of the reference driver's DirectoryBackend).
     */
    private static void copyResources(Path sandboxes, String templateId, int count) throws IOException {
        Path template = sandboxes.resolve(templateId);
        String record = Files.readString(template.resolve("resource.properties"), StandardCharsets.UTF_8);
        byte[] spec = Files.readAllBytes(template.resolve("spec.properties"));
        Matcher backend = BACKEND_ID.matcher(record);
        if (!backend.find() || !record.contains(sandboxName(0))) {
            throw new IllegalStateException("unexpected record format in " + template);
        }
        String templateBackendId = backend.group(1);
        Path names = sandboxes.resolveSibling("names").resolve(WORKSPACE);
        Files.deleteIfExists(names.resolve(sandboxName(0)).resolve(templateId));
        for (int number = 0; number < count; number++) {
            String id = sandboxId(number);
            Path folder = sandboxes.resolve(id);
            Path nameEntry = names.resolve(sandboxName(number)).resolve(id);
            Files.createDirectories(nameEntry.getParent());
            Files.write(nameEntry, new byte[0]);
            Files.createDirectories(folder.resolve("workspace"));
            Files.write(folder.resolve("spec.properties"), spec);
            Files.writeString(
                    folder.resolve("resource.properties"),
                    record.replace(templateId, id)
                            .replace(sandboxName(0), sandboxName(number))
                            .replace(templateBackendId, UUID.randomUUID().toString()),
                    StandardCharsets.UTF_8);
        }
        Trees.delete(template);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Report

    static String markdown(Settings settings, List<Row> rows) {
        var out = new StringBuilder();
        out.append(String.format(
                Locale.ROOT,
                "Stored sandboxes: %d processors, max heap %d MiB, GetSandbox %d calls per phase, quiet %d s,"
                        + " pages of %d%n%n",
                Runtime.getRuntime().availableProcessors(),
                Runtime.getRuntime().maxMemory() >> 20,
                settings.calls(),
                settings.quietSeconds(),
                PAGE_SIZE));
        out.append("| stored | generate s | start until ready s | start CPU s"
                + " | restarts until ready s: median (lowest to highest) | CPU s in quiet | live heap MiB"
                + " | get p50/p99 ms (1) | get p50/p99 ms (64) | get p50 / first count's (1 / 64)"
                + " | page ms first/middle/last | pages | not READY | reconciled at start |\n");
        out.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
        Row first = rows.isEmpty() ? null : rows.getFirst();
        for (Row r : rows) {
            out.append(String.format(
                    Locale.ROOT,
                    "| %d | %s | %s | %s | %s | %s | %.0f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.1f / %.1f / %.1f"
                            + " | %d | %d | %s |%n",
                    r.stored(),
                    format(r.generateSeconds()),
                    format(r.startSeconds()),
                    format(r.startCpuSeconds()),
                    spread(r.restartSeconds()),
                    format(r.quietCpuSeconds()),
                    r.heapMiB(),
                    r.get1P50(),
                    r.get1P99(),
                    r.get64P50(),
                    r.get64P99(),
                    r.get1P50() / first.get1P50(),
                    r.get64P50() / first.get64P50(),
                    r.firstPage(),
                    r.middlePage(),
                    r.lastPage(),
                    r.pages(),
                    r.notReady(),
                    r.reconciled()));
        }
        return out.toString();
    }

    /** The median of {@code seconds} with the lowest and highest: {@code 0.52 (0.48 to 0.61)}; n/a when empty. */
    static String spread(List<Double> seconds) {
        if (seconds.isEmpty()) {
            return "n/a";
        }
        List<Double> sorted = seconds.stream().sorted().toList();
        int n = sorted.size();
        double median = n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
        return String.format(Locale.ROOT, "%.2f (%.2f to %.2f)", median, sorted.getFirst(), sorted.getLast());
    }

    private static double liveHeapMiB() {
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed() / (1024.0 * 1024.0);
    }

    private static double seconds(long nanos) {
        return nanos < 0 ? Double.NaN : nanos / 1e9;
    }

    private static String format(double value) {
        return String.format(Locale.ROOT, "%.1f", value);
    }

    private static void progress(String message) {
        System.err.println("[bench] " + message);
    }
}
