package dev.sandgate.benchmarks;

import dev.sandgate.api.v1.WatchSandboxesRequest;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.nio.NioIoHandler;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ClientResponseObserver;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The watch fan-out benchmark: a gateway in this JVM on the reference driver (as {@link GatewayBenchmark} starts it),
 * {@code W} watch streams over all sandboxes, and lifecycle calls (create, stop, start, delete of distinct sandboxes)
 * paced at a fixed rate from 16 clients. For each number of watchers, in one run: the lifecycle calls' latency, and
 * every event's delay from the observation time the gateway stamped on it (its commit) to its arrival at the watcher,
 * in this JVM's clock. The row with 0 watchers is the same run's floor. Prints a markdown table.
 *
 * <p>The clients are kept cheap and apart from the gateway, so that the figures are the gateway's: the watch streams
 * and the lifecycle calls use their own channels on the tool's own event loops ({@code bench-net-*} threads), the
 * watchers take events on those loops (no hand-off to another thread) and read only each event's type and observation
 * time ({@link WatchStamps}). Each row gives the CPU the gateway's threads and the clients' transport used, in cores.
 */
public final class WatchBenchmark {
    static final String USAGE = """
            Usage: WatchBenchmark [--watchers 0,10,100,1000] [--rate 200] [--seconds 10] [--channels 8] [--smoke]
              --watchers  comma-separated numbers of concurrent watch streams, one measured phase each
              --rate      lifecycle calls per second, in aggregate (16 clients)
              --seconds   how long each phase offers calls
              --channels  client channels the watch streams are spread over
              --smoke     0,10 watchers, 40 calls/s for 2 s: a check that the tool works
            """;

    private static final int CLIENTS = 16;
    private static final String CLIENT_THREADS = "bench-";
    private static final int REQUEST_BATCH = 128;

    record Settings(List<Integer> watchers, double rate, int seconds, int channels) {
        static Settings parse(String... args) {
            BenchmarkOptions options = BenchmarkOptions.parse(
                    args, Set.of("--watchers", "--rate", "--seconds", "--channels"), Set.of("--smoke"));
            boolean smoke = options.has("--smoke");
            List<Integer> watchers = options.integers("--watchers", smoke ? List.of(0, 10) : List.of(0, 10, 100, 1000));
            double rate = options.number("--rate", smoke ? 40 : 200);
            int seconds = options.integer("--seconds", smoke ? 2 : 10);
            int channels = options.integer("--channels", 8);
            if (watchers.isEmpty() || watchers.stream().anyMatch(w -> w < 0 || w > 5000)) {
                throw new IllegalArgumentException("--watchers: each between 0 and 5000");
            }
            if (!(rate > 0 && rate <= 5000) || seconds < 1 || seconds > 300 || channels < 1 || channels > 64) {
                throw new IllegalArgumentException("--rate in (0, 5000], --seconds in [1, 300], --channels in [1, 64]");
            }
            return new Settings(watchers, rate, seconds, channels);
        }
    }

    /** One phase's figures. */
    record Row(
            int watchers,
            int calls,
            long callErrors,
            double opsPerSecond,
            double callP50,
            double callP99,
            long events,
            long expectedEvents,
            double delayP50,
            double delayP99,
            double delayMax,
            int overflowed,
            int liveThreads,
            double gatewayCores,
            long gatewayCpuNanos,
            double clientCores,
            double processCores,
            double othersShare) {}

    public static void main(String[] args) throws Exception {
        Settings settings = BenchmarkOptions.settingsOrExit(args, USAGE, Settings::parse);
        List<Row> rows = run(settings);
        System.out.print(markdown(settings, rows));
        System.exit(rows.stream().anyMatch(r -> r.callErrors() > 0 || r.overflowed() > 0) ? 1 : 0);
    }

    static List<Row> run(Settings settings) throws IOException, InterruptedException {
        Path work = Files.createTempDirectory("sandgate-bench-watch-");
        System.setProperty("sandgate.bench.log", work.resolve("gateway.log").toString());
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", "sandgate-bench-logback.xml");
        }
        Path driverDirectory = Files.isWritable(Path.of("/dev/shm"))
                ? Files.createTempDirectory(Path.of("/dev/shm"), "sandgate-bench-watch-")
                : work.resolve("reference");
        try (BenchGateway gateway =
                BenchGateway.start(work.resolve("data"), driverDirectory, Duration.ofSeconds(1), "NORMAL")) {
            EventLoopGroup loops = new MultiThreadIoEventLoopGroup(
                    2,
                    Thread.ofPlatform()
                            .name(CLIENT_THREADS + "net-", 0)
                            .daemon()
                            .factory(),
                    NioIoHandler.newFactory());
            List<ManagedChannel> channels = new ArrayList<>();
            for (int i = 0; i <= settings.channels(); i++) {
                channels.add(NettyChannelBuilder.forAddress(
                                new InetSocketAddress(InetAddress.getLoopbackAddress(), gateway.port()))
                        .eventLoopGroup(loops)
                        .channelType(NioSocketChannel.class)
                        .directExecutor()
                        .usePlaintext()
                        .build());
            }
            try {
                // The lifecycle calls have a channel of their own; the watch streams share the others.
                LifecycleClient lifecycle = new LifecycleClient(channels.getLast(), Duration.ofSeconds(30), "busybox");
                List<ManagedChannel> watchChannels = channels.subList(0, settings.channels());
                phase(settings, 0, lifecycle, watchChannels, "warm-up"); // not reported
                List<Row> rows = new ArrayList<>();
                for (int watchers : settings.watchers()) {
                    rows.add(phase(settings, watchers, lifecycle, watchChannels, "w" + watchers));
                }
                return rows;
            } finally {
                for (ManagedChannel channel : channels) {
                    channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
                }
                loops.shutdownGracefully(0, 5, TimeUnit.SECONDS).awaitUninterruptibly(10, TimeUnit.SECONDS);
            }
        } finally {
            Trees.delete(work);
            if (Files.exists(driverDirectory)) {
                Trees.delete(driverDirectory);
            }
        }
    }

    private static Row phase(
            Settings settings, int count, LifecycleClient lifecycle, List<ManagedChannel> channels, String workspace)
            throws InterruptedException {
        System.err.println("[bench] " + count + " watchers, " + (long) settings.rate() + " calls/s for "
                + settings.seconds() + " s");
        // Each call makes about two events; keep room for four per call, and count (without keeping) any beyond.
        int keep = (int) Math.min(1 << 20, Math.max(1024, settings.rate() * settings.seconds() * 4));
        List<Watcher> watchers = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            watchers.add(new Watcher(channels.get(i % channels.size()), workspace, keep));
        }
        for (Watcher watcher : watchers) {
            watcher.awaitSynced();
        }
        ThreadCpu cpuBefore = ThreadCpu.snapshot(CLIENT_THREADS);
        long phaseStart = System.nanoTime();
        int calls = (int) (settings.rate() * settings.seconds());
        int perClient = Math.max(1, calls / CLIENTS / 4) * 4;
        String[] ids = new String[CLIENTS];
        AtomicInteger sequence = new AtomicInteger();
        ClosedLoop.Outcome outcome = ClosedLoop.paced(
                CLIENTS, perClient, Duration.ofSeconds(settings.seconds() * 3L), settings.rate(), (client, index) -> {
                    switch (index % 4) {
                        case 0 -> ids[client] = lifecycle.create(workspace, "s" + sequence.incrementAndGet());
                        case 1 -> lifecycle.stop(ids[client]);
                        case 2 -> lifecycle.start(ids[client]);
                        default -> lifecycle.delete(ids[client]);
                    }
                });
        int liveThreads = Thread.activeCount();
        // Each committed lifecycle call produces at least one event for every watcher of its workspace.
        long made = outcome.latencies().count();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline && watchers.stream().anyMatch(w -> w.received.get() < made && !w.ended())) {
            Thread.sleep(20);
        }
        ThreadCpu.Used cpu = ThreadCpu.snapshot(CLIENT_THREADS).since(cpuBefore);
        double wall = System.nanoTime() - phaseStart;
        long events = 0;
        int overflowed = 0;
        List<long[]> delays = new ArrayList<>();
        for (Watcher watcher : watchers) {
            // Only a stream the gateway ended counts; the cancel below ends every stream on the client's side.
            overflowed += watcher.ended() ? 1 : 0;
            watcher.close();
            events += watcher.received.get();
            delays.add(watcher.delays());
        }
        Latencies delay =
                new Latencies(delays.stream().flatMapToLong(Arrays::stream).toArray());
        return new Row(
                count,
                outcome.latencies().count(),
                outcome.errors(),
                outcome.throughputPerSecond(),
                outcome.latencies().percentileMillis(50),
                outcome.latencies().percentileMillis(99),
                events,
                made * count,
                delay.percentileMillis(50),
                delay.percentileMillis(99),
                delay.maxMillis(),
                overflowed,
                liveThreads,
                cpu.othersNanos() / wall,
                cpu.othersNanos(),
                cpu.clientNanos() / wall,
                cpu.processNanos() < 0 ? Double.NaN : cpu.processNanos() / wall,
                outcome.othersCpuShare());
    }

    /** One watch stream: counts the events after SYNCED and keeps each one's delay, in microseconds. */
    private static final class Watcher implements ClientResponseObserver<WatchSandboxesRequest, WatchStamps.Stamp> {
        final AtomicInteger received = new AtomicInteger();
        private final CountDownLatch synced = new CountDownLatch(1);
        private final int[] delays;
        private final AtomicLong stored = new AtomicLong();
        private volatile boolean ended;
        private volatile boolean closing;
        private volatile ClientCallStreamObserver<WatchSandboxesRequest> call;
        private int unrequested; // events taken since the last request (onNext calls never overlap)

        Watcher(ManagedChannel channel, String workspace, int keep) {
            this.delays = new int[keep];
            ClientCalls.asyncServerStreamingCall(
                    channel.newCall(WatchStamps.METHOD, CallOptions.DEFAULT),
                    WatchSandboxesRequest.newBuilder().setWorkspace(workspace).build(),
                    this);
        }

        @Override
        public void beforeStart(ClientCallStreamObserver<WatchSandboxesRequest> requestStream) {
            call = requestStream;
            // Ask for events in batches, not one request per event.
            requestStream.disableAutoRequestWithInitial(2 * REQUEST_BATCH);
        }

        @Override
        public void onNext(WatchStamps.Stamp event) {
            if (++unrequested == REQUEST_BATCH) {
                unrequested = 0;
                call.request(REQUEST_BATCH);
            }
            if (event.type() == WatchStamps.Stamp.SYNCED) {
                synced.countDown();
                return;
            }
            if (event.type() == WatchStamps.Stamp.SNAPSHOT) {
                return;
            }
            long now = ChronoUnit.NANOS.between(Instant.EPOCH, Instant.now());
            long slot = stored.getAndIncrement();
            if (slot < delays.length) {
                delays[(int) slot] =
                        (int) Math.min(Integer.MAX_VALUE, Math.max(0, (now - event.observeEpochNanos()) / 1000));
            }
            received.incrementAndGet();
        }

        @Override
        public void onError(Throwable t) {
            if (!closing) {
                ended = true;
                System.err.println("[bench] a watch stream ended: " + io.grpc.Status.fromThrowable(t));
            }
            synced.countDown();
        }

        @Override
        public void onCompleted() {
            ended = true;
        }

        boolean ended() {
            return ended;
        }

        void awaitSynced() throws InterruptedException {
            if (!synced.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("a watch did not sync within 60 s");
            }
        }

        /** The kept delays, in nanoseconds. */
        long[] delays() {
            int kept = (int) Math.min(stored.get(), delays.length);
            long[] nanos = new long[kept];
            for (int i = 0; i < kept; i++) {
                nanos[i] = delays[i] * 1000L;
            }
            return nanos;
        }

        void close() {
            closing = true;
            if (call != null) {
                call.cancel("benchmark phase over", null);
            }
        }
    }

    static String markdown(Settings settings, List<Row> rows) {
        StringBuilder out = new StringBuilder();
        out.append(String.format(
                Locale.ROOT,
                "Watch fan-out: lifecycle calls paced at %d/s from %d clients for %d s; watch streams over %d"
                        + " channels; %d processors%n%n",
                (long) settings.rate(),
                CLIENTS,
                settings.seconds(),
                settings.channels(),
                Runtime.getRuntime().availableProcessors()));
        out.append("| watchers | calls | errors | ops/s | call p50 ms | call p99 ms | call p99 / 0 watchers"
                + " | events | expected at least | event delay p50 ms | p99 ms | max ms | overflowed"
                + " | live threads | cores: gateway | gateway CPU µs / event above 0 watchers | cores: clients' transport | cores: process"
                + " | others' share |\n");
        out.append("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
        double floor = rows.stream()
                .filter(r -> r.watchers() == 0)
                .mapToDouble(Row::callP99)
                .findFirst()
                .orElse(Double.NaN);
        long floorCpu = rows.stream()
                .filter(r -> r.watchers() == 0)
                .mapToLong(Row::gatewayCpuNanos)
                .findFirst()
                .orElse(-1);
        for (Row r : rows) {
            // What the events cost the gateway: its CPU beyond that of the same calls with no watcher, per event.
            double perEvent =
                    r.events() == 0 || floorCpu < 0 ? Double.NaN : (r.gatewayCpuNanos() - floorCpu) / 1e3 / r.events();
            out.append(String.format(
                    Locale.ROOT,
                    "| %d | %d | %d | %.0f | %.2f | %.2f | %.2f | %d | %d | %s | %s | %s | %d | %d | %.2f | %s | %.2f | %.2f | %s |%n",
                    r.watchers(),
                    r.calls(),
                    r.callErrors(),
                    r.opsPerSecond(),
                    r.callP50(),
                    r.callP99(),
                    r.callP99() / floor,
                    r.events(),
                    r.expectedEvents(),
                    millis(r.delayP50()),
                    millis(r.delayP99()),
                    millis(r.delayMax()),
                    r.overflowed(),
                    r.liveThreads(),
                    r.gatewayCores(),
                    millis(perEvent),
                    r.clientCores(),
                    r.processCores(),
                    Double.isNaN(r.othersShare())
                            ? "n/a"
                            : String.format(Locale.ROOT, "%.0f %%", 100 * r.othersShare())));
        }
        return out.toString();
    }

    private static String millis(double value) {
        return Double.isNaN(value) ? "n/a" : String.format(Locale.ROOT, "%.2f", value);
    }
}
