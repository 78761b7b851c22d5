package dev.sandgate.benchmarks;

import com.google.protobuf.Empty;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.ListSandboxesResponse;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The gateway's load benchmark: starts the gateway in this JVM on 127.0.0.1 over Netty, with the reference driver
 * (directory backend) and the SQLite store, registers a no-op gRPC method on the same server, stores {@code --stored}
 * sandboxes, then, for each number of clients, measures create, stop, start and delete over distinct sandboxes and the
 * no-op with the same clients. Prints a markdown table (docs/benchmarks.md explains it). Everything it creates lives in
 * a temporary directory that is removed at the end.
 *
 * <p>The gateway, its store and the clients share this JVM, so {@code -Xmx256m} on this JVM (scripts/bench sets it)
 * bounds the gateway and the load generator together.
 */
public final class GatewayBenchmark {
    private static final String WORKSPACE = "bench";
    private static final String STORED_WORKSPACE = "bench-stored";
    private static final int PREPOPULATE_CLIENTS = 16;

    private final BenchmarkSettings settings;
    private final LifecycleClient lifecycle;
    private final ManagedChannel channel;

    private GatewayBenchmark(BenchmarkSettings settings, ManagedChannel channel) {
        this.settings = settings;
        this.channel = channel;
        this.lifecycle = new LifecycleClient(channel, Duration.ofSeconds(30), "busybox");
    }

    public static void main(String[] args) throws Exception {
        BenchmarkSettings settings =
                BenchmarkOptions.settingsOrExit(args, BenchmarkSettings.USAGE, BenchmarkSettings::parse);
        Report report = run(settings);
        String markdown = report.markdown();
        System.out.print(markdown);
        if (settings.output().isPresent()) {
            Files.writeString(settings.output().get(), markdown, StandardCharsets.UTF_8);
        }
        long errors = report.rows().stream().mapToLong(Report.Row::errors).sum();
        System.exit(errors == 0 ? 0 : 1);
    }

    /** Runs the whole benchmark in a temporary directory of its own and returns what it measured. */
    static Report run(BenchmarkSettings settings) throws IOException, InterruptedException {
        Path work = Files.createTempDirectory("sandgate-bench-");
        long started = System.nanoTime();
        Path log = work.resolve("gateway.log");
        logTo(log);
        boolean failed = true;
        Path driverDirectory = driverDirectory(settings, work);
        try (BenchGateway gateway = BenchGateway.start(work, driverDirectory, settings, NoopService.definition())) {
            ManagedChannel channel = NettyChannelBuilder.forAddress(
                            new InetSocketAddress(InetAddress.getLoopbackAddress(), gateway.port()))
                    .usePlaintext()
                    .build();
            try {
                Report report = new GatewayBenchmark(settings, channel).measure(started, describe(driverDirectory));
                failed = report.rows().stream().anyMatch(row -> row.errors() > 0);
                return report;
            } finally {
                channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
        } finally {
            if (failed && Files.exists(log)) {
                Path kept = Files.createTempFile("sandgate-bench-gateway-", ".log");
                Files.copy(log, kept, StandardCopyOption.REPLACE_EXISTING);
                progress("calls failed: the gateway's log is kept in " + kept);
            }
            Trees.delete(work);
            if (Files.exists(driverDirectory)) {
                Trees.delete(driverDirectory);
            }
        }
    }

    /** A folder's file system type and path, for the report. */
    private static String describe(Path folder) {
        try {
            return Files.getFileStore(folder).type() + " (" + folder.getParent() + ")";
        } catch (IOException e) {
            return folder.getParent().toString();
        }
    }

    /**
     * Where the reference driver keeps its sandboxes. It stands in for a container engine, so by default its files
     * live in shared memory (a new folder of /dev/shm when there is one): the benchmark then measures the gateway,
     * not the file system's metadata operations of a test double. The gateway's store is always on disk, in {@code
     * work}.
     */
    private static Path driverDirectory(BenchmarkSettings settings, Path work) throws IOException {
        if (settings.driverDirectory().isPresent()) {
            return Files.createDirectories(settings.driverDirectory().get()).resolve("sandgate-bench-reference");
        }
        Path shm = Path.of("/dev/shm");
        if (Files.isDirectory(shm) && Files.isWritable(shm)) {
            return Files.createTempDirectory(shm, "sandgate-bench-reference-");
        }
        return work.resolve("reference-sandboxes");
    }

    private Report measure(long started, String driverDirectory) throws InterruptedException {
        progress("storing " + settings.storedSandboxes() + " sandboxes");
        int storedPerClient = Math.ceilDiv(settings.storedSandboxes(), PREPOPULATE_CLIENTS);
        ClosedLoop.Outcome stored =
                ClosedLoop.run(PREPOPULATE_CLIENTS, storedPerClient, Duration.ofMinutes(10), (client, index) -> {
                    int number = client * storedPerClient + index;
                    if (number < settings.storedSandboxes()) {
                        create(STORED_WORKSPACE, "stored-" + number);
                    }
                });
        requireNoErrors("storing sandboxes", stored);
        long storedCount = countStored();

        if (settings.warmupCalls() > 0) {
            progress("warming up");
            LifecycleRound warmup = new LifecycleRound("warmup", 16, settings.warmupCalls());
            warmup.runAll();
        }

        long gcBefore = gcMillis();
        List<Report.Row> rows = new ArrayList<>();
        int maxClients = settings.clientCounts().stream()
                .mapToInt(Integer::intValue)
                .max()
                .orElseThrow();
        for (int clients : settings.clientCounts()) {
            progress(clients + " clients");
            int perClient = settings.callsPerClient(clients);
            ClosedLoop.Outcome noop = ClosedLoop.run(clients, perClient, settings.phaseLimit(), (c, i) -> noop());
            rows.add(row(clients, Report.NOOP, noop, noop));
            LifecycleRound lifecycle = new LifecycleRound("c" + clients, clients, perClient);
            List<ClosedLoop.Outcome> phases = lifecycle.runAll();
            String[] names = {"create", "stop", "start", "delete"};
            for (int p = 0; p < phases.size(); p++) {
                rows.add(row(clients, names[p], phases.get(p), noop));
            }
            rows.add(row(clients, Report.LIFECYCLE, merge(phases), noop));
            if (settings.pacedRate() > 0 && clients == maxClients) {
                progress(clients + " clients, paced at " + (long) settings.pacedRate() + " calls/s");
                ClosedLoop.Outcome pacedNoop = ClosedLoop.paced(
                        clients, perClient, settings.phaseLimit(), settings.pacedRate(), (c, i) -> noop());
                rows.add(row(clients, Report.paced(Report.NOOP, settings.pacedRate()), pacedNoop, pacedNoop));
                LifecycleRound paced = new LifecycleRound("p" + clients, clients, perClient, settings.pacedRate());
                List<ClosedLoop.Outcome> pacedPhases = paced.runAll();
                for (int p = 0; p < pacedPhases.size(); p++) {
                    rows.add(row(clients, Report.paced(names[p], settings.pacedRate()), pacedPhases.get(p), pacedNoop));
                }
                if (settings.trace().isPresent()) {
                    writeTrace(settings.trace().get(), "no-op", pacedNoop);
                    for (int p = 0; p < pacedPhases.size(); p++) {
                        writeTrace(settings.trace().get(), names[p], pacedPhases.get(p));
                    }
                }
                rows.add(row(
                        clients, Report.paced(Report.LIFECYCLE, settings.pacedRate()), merge(pacedPhases), pacedNoop));
            }
        }
        long gcMillis = gcMillis() - gcBefore;

        System.gc();
        long heapUsed = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        return new Report(
                new Report.Environment(
                        Runtime.getRuntime().availableProcessors(),
                        System.getProperty("java.vm.name") + " " + Runtime.version(),
                        System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                                + System.getProperty("os.arch"),
                        memoryOptions(),
                        Runtime.getRuntime().maxMemory(),
                        heapUsed,
                        storedCount,
                        settings.synchronous(),
                        gcMillis,
                        Duration.ofNanos(System.nanoTime() - started),
                        driverDirectory,
                        settings),
                rows);
    }

    /**
     * The sandboxes of one level: client {@code c} creates its own {@code perClient} sandboxes, then stops, starts and
     * deletes each of those it created. Each phase is measured on its own.
     */
    private final class LifecycleRound {
        private final String prefix;
        private final int clients;
        private final int perClient;
        private final String[][] ids;
        private final double rate;

        LifecycleRound(String prefix, int clients, int perClient) {
            this(prefix, clients, perClient, 0);
        }

        /** A round whose phases are paced at {@code rate} calls per second (0: closed loop). */
        LifecycleRound(String prefix, int clients, int perClient, double rate) {
            this.prefix = prefix;
            this.clients = clients;
            this.perClient = perClient;
            this.ids = new String[clients][perClient];
            this.rate = rate;
        }

        List<ClosedLoop.Outcome> runAll() throws InterruptedException {
            List<ClosedLoop.Outcome> phases = new ArrayList<>();
            phases.add(phase((c, i) -> ids[c][i] = create(WORKSPACE, prefix + "-" + c + "-" + i)));
            phases.add(phase((c, i) -> stop(ids[c][i])));
            phases.add(phase((c, i) -> start(ids[c][i])));
            phases.add(phase((c, i) -> delete(ids[c][i])));
            return phases;
        }

        private ClosedLoop.Outcome phase(ClosedLoop.Call call) throws InterruptedException {
            return rate > 0
                    ? ClosedLoop.paced(clients, perClient, settings.phaseLimit(), rate, call)
                    : ClosedLoop.run(clients, perClient, settings.phaseLimit(), call);
        }
    }

    private String create(String workspace, String name) {
        return lifecycle.create(workspace, name);
    }

    private void stop(String id) {
        requireCreated(id);
        lifecycle.stop(id);
    }

    private void start(String id) {
        requireCreated(id);
        lifecycle.start(id);
    }

    private void delete(String id) {
        requireCreated(id);
        lifecycle.delete(id);
    }

    private void noop() {
        ClientCalls.blockingUnaryCall(
                channel,
                NoopService.CALL,
                CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS),
                Empty.getDefaultInstance());
    }

    private static void requireCreated(String id) {
        if (id == null) {
            throw new IllegalStateException("its create failed or did not run before the phase limit");
        }
    }

    private long countStored() {
        long count = 0;
        String pageToken = "";
        do {
            ListSandboxesResponse page = lifecycle
                    .stub()
                    .listSandboxes(ListSandboxesRequest.newBuilder()
                            .setWorkspace(STORED_WORKSPACE)
                            .setPageSize(1000)
                            .setPageToken(pageToken)
                            .build());
            count += page.getSandboxesCount();
            pageToken = page.getNextPageToken();
        } while (!pageToken.isEmpty());
        return count;
    }

    private static Report.Row row(int clients, String operation, ClosedLoop.Outcome outcome, ClosedLoop.Outcome noop) {
        if (outcome.errors() > 0 && outcome.firstError() != null) {
            progress(clients + " clients, " + operation + ": " + outcome.errors() + " calls failed, the first with "
                    + outcome.firstError());
        }
        Latencies latencies = outcome.latencies();
        double p50 = latencies.percentileMillis(50);
        double p99 = latencies.percentileMillis(99);
        return new Report.Row(
                clients,
                operation,
                latencies.count(),
                outcome.errors(),
                outcome.throughputPerSecond(),
                p50,
                p99,
                latencies.maxMillis(),
                p50 / noop.latencies().percentileMillis(50),
                p99 / noop.latencies().percentileMillis(99),
                outcome.cpuMillisPerCall(),
                outcome.othersCpuShare() * 100,
                outcome.firstError() == null ? "" : outcome.firstError());
    }

    /** The four phases as one: every latency, and the calls over the phases' summed time. */
    static ClosedLoop.Outcome merge(List<ClosedLoop.Outcome> phases) {
        long elapsed = 0;
        long cpu = 0;
        double othersTime = 0;
        long errors = 0;
        int total = 0;
        String firstError = null;
        for (ClosedLoop.Outcome phase : phases) {
            elapsed += phase.elapsedNanos();
            cpu = cpu < 0 || phase.cpuNanos() < 0 ? -1 : cpu + phase.cpuNanos();
            // Weighted by each phase's time; NaN once any phase's is unknown.
            othersTime += phase.othersCpuShare() * phase.elapsedNanos();
            errors += phase.errors();
            total += phase.latencies().count();
            if (firstError == null) {
                firstError = phase.firstError();
            }
        }
        long[] all = new long[total];
        int at = 0;
        for (ClosedLoop.Outcome phase : phases) {
            long[] samples = phase.latencies().samples();
            System.arraycopy(samples, 0, all, at, samples.length);
            at += samples.length;
        }
        return new ClosedLoop.Outcome(
                new Latencies(all),
                List.of(),
                errors,
                firstError,
                elapsed,
                cpu,
                elapsed > 0 ? othersTime / elapsed : Double.NaN,
                Optional.empty());
    }

    /**
     * Writes a paced phase's calls to {@code folder/paced-<operation>.csv}, in the order they were due: when each was
     * due after the phase's start and its latency, in milliseconds. The header gives the phase's start as the JVM's
     * uptime, so that slow calls can be lined up with a GC log ({@code -Xlog:gc:file=...:uptime}).
     */
    private static void writeTrace(Path folder, String operation, ClosedLoop.Outcome outcome) {
        ClosedLoop.Timeline timeline = outcome.timeline().orElseThrow();
        var text = new StringBuilder("# paced phase of " + operation + ", started at JVM uptime "
                + timeline.startUptimeMillis() + " ms\ndue_ms,latency_ms\n");
        timeline.calls().stream()
                .sorted(java.util.Comparator.comparingLong(ClosedLoop.Timeline.Scheduled::dueNanos))
                .forEach(call -> text.append(
                        String.format(Locale.ROOT, "%.3f,%.3f%n", call.dueNanos() / 1e6, call.latencyNanos() / 1e6)));
        Path file = folder.resolve("paced-" + operation + ".csv");
        try {
            Files.createDirectories(folder);
            Files.writeString(file, text, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
        progress("wrote " + file);
    }

    private static void requireNoErrors(String what, ClosedLoop.Outcome outcome) {
        if (outcome.errors() > 0) {
            throw new IllegalStateException(
                    what + ": " + outcome.errors() + " calls failed, the first with " + outcome.firstError());
        }
    }

    /** The heap and collector options the JVM was started with ({@code -Xms...}, {@code -XX:...}), without paths. */
    private static String memoryOptions() {
        return ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(option -> option.startsWith("-Xm") || option.startsWith("-XX:"))
                .filter(option -> !option.contains("/"))
                .collect(Collectors.joining(" "));
    }

    private static long gcMillis() {
        return ManagementFactory.getGarbageCollectorMXBeans().stream()
                .mapToLong(GarbageCollectorMXBean::getCollectionTime)
                .filter(time -> time > 0)
                .sum();
    }

    /**
     * Sends the gateway's log to {@code file} (unless the JVM was told where to log): it logs as in production, one
     * INFO line per lifecycle transition, without mixing into the report. Takes effect if logging has not started.
     */
    private static void logTo(Path file) {
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("sandgate.bench.log", file.toString());
            System.setProperty("logback.configurationFile", "sandgate-bench-logback.xml");
        }
    }

    private static void progress(String message) {
        System.err.println("[bench] " + message);
    }
}
