package dev.sandgate.gateway.metrics;

import static java.util.Objects.requireNonNull;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.sandgate.gateway.store.SandboxPhase;
import dev.sandgate.gateway.store.Store;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The gateway's metrics in a Micrometer Prometheus registry, served as Prometheus text on {@code /metrics} by an HTTP
 * server of their own (not the gRPC port). docs/operations.md lists every metric.
 */
public final class PrometheusMetrics implements GatewayObserver, AutoCloseable {
    /** Histogram buckets of every duration, from a fast store commit to a slow image pull. */
    private static final Duration[] BUCKETS = {
        Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25),
        Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500),
        Duration.ofSeconds(1), Duration.ofMillis(2500), Duration.ofSeconds(5), Duration.ofSeconds(10),
        Duration.ofSeconds(30), Duration.ofSeconds(120)
    };
    /** How old the counts of sandboxes by phase may be when scraped. */
    private static final Duration CENSUS_MAX_AGE = Duration.ofSeconds(5);

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final String driverName;
    private final Meter.MeterProvider<Timer> grpcCalls;
    private final Meter.MeterProvider<Counter> transitions;
    private final Meter.MeterProvider<Timer> transitionDurations;
    private final Meter.MeterProvider<Timer> driverCalls;
    private final Meter.MeterProvider<Timer> storeCommits;
    private final Counter recoveries;
    private final Counter retries;
    private final Counter delivered;
    private final Counter dropped;
    private final Counter holesSkipped;
    private final Counter holesCapped;
    private final Counter logMissed;
    private final AtomicInteger openWatches = new AtomicInteger();
    private final AtomicInteger engineUp = new AtomicInteger(1);
    private volatile boolean serving;
    private final JvmGcMetrics gcMetrics = new JvmGcMetrics();
    private final ExecutorService httpThread;
    private final HttpServer http;
    /** Held here: a gauge keeps only a weak reference to what it reads. */
    @SuppressWarnings("UnusedVariable") // never read: the strong reference is the point
    private volatile SandboxCensus census;

    private PrometheusMetrics(InetSocketAddress address, String driverName) throws IOException {
        this.driverName = requireNonNull(driverName, "driverName is null");
        grpcCalls = timer("sandgate.grpc.server.calls", "gRPC calls by method and status code");
        transitions = Counter.builder("sandgate.lifecycle.transitions")
                .description("Lifecycle transitions by operation and outcome")
                .withRegistry(registry);
        transitionDurations =
                timer("sandgate.lifecycle.transition.duration", "Lifecycle transitions from their driver call's start");
        driverCalls = timer("sandgate.driver.call.duration", "Driver calls by driver, operation and outcome");
        storeCommits =
                timer("sandgate.store.commit.duration", "Store write transactions, waiting for the writer included");
        recoveries = Counter.builder("sandgate.lifecycle.recoveries")
                .description("Pending transitions resumed by recovery at start-up")
                .register(registry);
        retries = Counter.builder("sandgate.lifecycle.retries")
                .description("Automatic retries of pending transitions scheduled")
                .register(registry);
        delivered = Counter.builder("sandgate.watch.events.delivered")
                .description("Changes sent on watch streams")
                .register(registry);
        dropped = Counter.builder("sandgate.watch.events.dropped")
                .description("Changes that overflowed a watch stream's buffer (the stream ends with WATCH_OVERFLOW)")
                .register(registry);
        holesSkipped = Counter.builder("sandgate.watch.log.holes.skipped")
                .description("Change-log sequence numbers passed over as never filled (their transactions ended)")
                .tag("reason", "ended")
                .register(registry);
        holesCapped = Counter.builder("sandgate.watch.log.holes.skipped")
                .description("Change-log sequence numbers passed over as never filled (their transactions ended)")
                .tag("reason", "time_cap")
                .register(registry);
        logMissed = Counter.builder("sandgate.watch.log.missed")
                .description("Times the change-log follower may have missed changes (its watch streams ended)")
                .register(registry);
        Gauge.builder("sandgate.watch.streams.open", openWatches, AtomicInteger::get)
                .description("Open WatchSandboxes streams")
                .register(registry);
        Gauge.builder("sandgate.engine.available", engineUp, AtomicInteger::get)
                .description("1 while the driver's engine answers the readiness check, else 0")
                .tag("driver", driverName)
                .register(registry);
        new ClassLoaderMetrics().bindTo(registry);
        new JvmMemoryMetrics().bindTo(registry);
        gcMetrics.bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);

        http = HttpServer.create(address, 0);
        httpThread = Executors.newSingleThreadExecutor(runnable -> {
            Thread thread = new Thread(runnable, "sandgate-metrics");
            thread.setDaemon(true);
            return thread;
        });
        http.setExecutor(httpThread);
        http.createContext("/metrics", this::scrape);
        // For HTTP probes (kubelet's gRPC probe cannot speak TLS): the same answers as the gRPC health service.
        http.createContext("/livez", exchange -> probe(exchange, serving));
        http.createContext("/readyz", exchange -> probe(exchange, serving && engineUp.get() == 1));
        http.start();
    }

    /**
     * Starts serving on {@code address} (port 0: a free port, see {@link #port()}).
     *
     * @throws UncheckedIOException when the address cannot be bound
     */
    public static PrometheusMetrics start(InetSocketAddress address, String driverName) {
        try {
            return new PrometheusMetrics(address, driverName);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot serve metrics on " + address + ": " + e.getMessage(), e);
        }
    }

    /** Adds the gauges counted from the store: sandboxes by phase and transitions pending. */
    public void countSandboxes(Store store) {
        SandboxCensus census = new SandboxCensus(store, CENSUS_MAX_AGE.toNanos());
        this.census = census;
        for (SandboxPhase phase : SandboxPhase.values()) {
            Gauge.builder("sandgate.sandboxes", census, c -> c.phase(phase))
                    .description("Sandboxes by phase (counted from the store at most every 5 s)")
                    .tag("phase", phase.name())
                    .register(registry);
        }
        Gauge.builder("sandgate.lifecycle.pending.transitions", census, SandboxCensus::pending)
                .description("Sandboxes with a transition recorded and not completed")
                .register(registry);
    }

    public int port() {
        return http.getAddress().getPort();
    }

    /** The text Prometheus scrapes. */
    public String scrape() {
        return registry.scrape();
    }

    private static void probe(HttpExchange exchange, boolean ok) throws IOException {
        try (exchange) {
            byte[] body = (ok ? "ok\n" : "not serving\n").getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
            exchange.sendResponseHeaders(ok ? 200 : 503, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }
    }

    private void scrape(HttpExchange exchange) throws IOException {
        try (exchange) {
            if (!exchange.getRequestMethod().equals("GET")
                    && !exchange.getRequestMethod().equals("HEAD")) {
                exchange.sendResponseHeaders(405, -1);
                return;
            }
            byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }
    }

    private Meter.MeterProvider<Timer> timer(String name, String description) {
        return Timer.builder(name)
                .description(description)
                .serviceLevelObjectives(BUCKETS)
                .withRegistry(registry);
    }

    @Override
    public void transition(String operation, String outcome, long nanos) {
        Tags tags = Tags.of("operation", operation, "outcome", outcome);
        transitions.withTags(tags).increment();
        transitionDurations.withTags(tags).record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void recovery() {
        recoveries.increment();
    }

    @Override
    public void retry() {
        retries.increment();
    }

    @Override
    public void driverCall(String operation, String outcome, long nanos) {
        driverCalls
                .withTags("driver", driverName, "operation", operation, "outcome", outcome.toLowerCase(Locale.ROOT))
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void storeCommit(boolean committed, long nanos) {
        storeCommits
                .withTags("outcome", committed ? "committed" : "rolled_back")
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void grpcCall(String method, String code, long nanos) {
        grpcCalls.withTags("method", method, "code", code).record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void watchStreamOpened() {
        openWatches.incrementAndGet();
    }

    @Override
    public void watchStreamClosed() {
        openWatches.decrementAndGet();
    }

    @Override
    public void watchEventDelivered() {
        delivered.increment();
    }

    @Override
    public void watchEventDropped() {
        dropped.increment();
    }

    @Override
    public void watchLogHolesSkipped(long count, boolean atTimeCap) {
        (atTimeCap ? holesCapped : holesSkipped).increment((double) count);
    }

    @Override
    public void watchLogMissed() {
        logMissed.increment();
    }

    @Override
    public void engineAvailable(boolean available) {
        engineUp.set(available ? 1 : 0);
    }

    @Override
    public void serving(boolean serving) {
        this.serving = serving;
    }

    @Override
    public void close() {
        http.stop(0);
        httpThread.shutdownNow();
        gcMetrics.close();
        registry.close();
    }
}
