package dev.sandgate.benchmarks.engine;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.Version;
import dev.sandgate.benchmarks.BenchmarkOptions;
import dev.sandgate.benchmarks.Trees;
import dev.sandgate.driver.container.ContainerDriverSettings;
import dev.sandgate.driver.container.EngineClients;
import dev.sandgate.spi.Labels;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * Gateway overhead on a real container engine: in one run, against one engine, it runs sandbox lifecycles (create
 * with launch, stop, start, delete) through the gateway's gRPC API (gateway in this JVM, loopback Netty, the podman or
 * docker driver, SQLite store in a temporary directory), through the same driver called directly ({@link DriverSide}:
 * no store, no gRPC, no watch) and as the same engine mutations made directly with docker-java ({@link DirectSide}),
 * rotating which side goes first in each iteration so that machine noise hits all alike. Prints a markdown table of
 * p50 and p99 per operation and side, and the gateway/direct and driver/direct ratios. Run it with {@code
 * scripts/bench-engine}; docs/benchmarks.md has a run's figures.
 */
public final class EngineBenchmark {
    private static final String API_VERSION = ContainerDriverSettings.DEFAULT_API_VERSION;

    private EngineBenchmark() {}

    public static void main(String[] args) throws IOException {
        EngineBenchmarkSettings settings = BenchmarkOptions.settingsOrExit(
                args,
                EngineBenchmarkSettings.USAGE,
                arguments -> EngineBenchmarkSettings.parse(arguments, System.getenv()));
        String markdown = run(settings);
        System.out.print(markdown);
        if (settings.output().isPresent()) {
            Files.writeString(settings.output().get(), markdown, StandardCharsets.UTF_8);
        }
    }

    static String run(EngineBenchmarkSettings settings) throws IOException {
        Path work = Files.createTempDirectory("sandgate-bench-engine-");
        Path log = work.resolve("gateway.log");
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("sandgate.bench.log", log.toString());
            System.setProperty("logback.configurationFile", "sandgate-bench-logback.xml");
        }
        String workspace = "bench-" + UUID.randomUUID().toString().substring(0, 8);
        boolean failed = true;
        try (DockerClient admin = connect(settings)) {
            String engineVersion = checkEngine(admin, settings);
            try {
                if (settings.gatewayWarmup() > 0) {
                    progress("warming up the gateway's code: " + settings.gatewayWarmup()
                            + " lifecycles on the reference driver");
                    GatewayWarmup.run(settings.gatewayWarmup(), work);
                }
                Map<String, Map<Operation, Samples>> measured;
                Samples bareCalls = new Samples();
                try (GatewaySide gateway = GatewaySide.start(settings, work.resolve("gateway-data"), workspace);
                        DriverSide driver = DriverSide.open(settings, workspace);
                        DirectSide direct =
                                new DirectSide(connect(settings), settings.engine(), settings.image(), workspace)) {
                    measured =
                            measure(settings, List.of(gateway, driver, direct), driver, gateway::bareCall, bareCalls);
                }
                failed = false;
                return table(settings, engineVersion, measured) + bareCallLine(bareCalls, measured);
            } finally {
                removeLeftovers(admin, workspace);
            }
        } finally {
            if (failed && Files.exists(log)) {
                Path kept = Files.createTempFile("sandgate-bench-engine-gateway-", ".log");
                Files.copy(log, kept, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                progress("the run failed: the gateway's log is kept in " + kept);
            }
            Trees.delete(work);
        }
    }

    /**
     * Runs the interleaved lifecycles. Before each call of {@code probed} (outside its timing) it makes one bare gRPC
     * call to the gateway ({@code bareCall}, nanoseconds), at the pacing the gateway's own calls see: its threads idle
     * while other sides work on the engine. Measured iterations add those to {@code bareCalls}.
     */
    static Map<String, Map<Operation, Samples>> measure(
            EngineBenchmarkSettings settings,
            List<LifecycleSide> sides,
            LifecycleSide probed,
            java.util.function.LongSupplier bareCall,
            Samples bareCalls) {
        Map<String, Map<Operation, Samples>> measured = new java.util.LinkedHashMap<>();
        for (LifecycleSide side : sides) {
            Map<Operation, Samples> perOperation = new EnumMap<>(Operation.class);
            for (Operation operation : Operation.values()) {
                perOperation.put(operation, new Samples());
            }
            measured.put(side.label(), perOperation);
        }
        int total = settings.warmup() + settings.iterations();
        for (int i = 0; i < total; i++) {
            boolean warmup = i < settings.warmup();
            for (LifecycleSide side : order(sides, i)) {
                Map<Operation, Samples> samples = warmup ? null : measured.get(side.label());
                Runnable beforeEachCall = () -> {};
                if (side.equals(probed)) {
                    beforeEachCall = () -> {
                        long nanos = bareCall.getAsLong();
                        if (!warmup) {
                            bareCalls.add(nanos);
                        }
                    };
                }
                lifecycle(side, "s" + i, samples, beforeEachCall);
            }
            if ((i + 1) % 10 == 0 || i + 1 == total) {
                progress((i + 1 - Math.min(i + 1, settings.warmup())) + "/" + settings.iterations()
                        + " measured iterations done");
            }
        }
        return measured;
    }

    /**
     * The order of the sides in iteration {@code i}: rotated by one each iteration, and reversed every other round, so
     * that over {@code 2 * sides.size()} iterations every side runs in every position, after every other side, equally
     * often.
     */
    static <T> List<T> order(List<T> sides, int i) {
        List<T> order = new ArrayList<>(sides);
        java.util.Collections.rotate(order, -(i % sides.size()));
        return (i / sides.size()) % 2 == 1 ? order.reversed() : order;
    }

    /**
     * One lifecycle of one sandbox on {@code side}; records each operation's latency unless {@code samples} is null.
     * {@code beforeEachCall} runs before each of the five calls, outside their timing.
     */
    static void lifecycle(LifecycleSide side, String name, Map<Operation, Samples> samples, Runnable beforeEachCall) {
        beforeEachCall.run();
        long t0 = System.nanoTime();
        String handle = side.create(name);
        long t1 = System.nanoTime();
        beforeEachCall.run();
        long t1b = System.nanoTime();
        side.stop(handle);
        long t2 = System.nanoTime();
        beforeEachCall.run();
        long t2b = System.nanoTime();
        side.start(handle);
        long t3 = System.nanoTime();
        beforeEachCall.run();
        side.stop(handle);
        beforeEachCall.run();
        long t4 = System.nanoTime();
        side.delete(handle);
        long t5 = System.nanoTime();
        if (samples != null) {
            samples.get(Operation.CREATE).add(t1 - t0);
            samples.get(Operation.STOP).add(t2 - t1b);
            samples.get(Operation.START).add(t3 - t2b);
            samples.get(Operation.DELETE).add(t5 - t4);
        }
    }

    /**
     * The bare gRPC calls' figures, next to what the gateway adds per operation at p50: the part of the gateway's cost
     * that the transport alone takes.
     */
    static String bareCallLine(Samples bareCalls, Map<String, Map<Operation, Samples>> measured) {
        if (bareCalls.count() == 0) {
            return "";
        }
        Map<Operation, Samples> gateway = measured.get("gateway");
        Map<Operation, Samples> direct = measured.get("direct docker-java");
        StringBuilder added = new StringBuilder();
        for (Operation operation : Operation.values()) {
            added.append(added.isEmpty() ? "" : ", ")
                    .append(String.format(
                            Locale.ROOT,
                            "%s %+.1f",
                            operation.title,
                            gateway.get(operation).percentileMillis(50)
                                    - direct.get(operation).percentileMillis(50)));
        }
        return String.format(
                Locale.ROOT,
                "Bare gRPC call to the gateway (grpc.health.v1.Health/Check on the same channel, before each call of the"
                        + " driver side, so at the same pacing): p50 %.2f ms, p99 %.2f ms over %d calls. Gateway minus"
                        + " direct at p50, in ms: %s.%n",
                bareCalls.percentileMillis(50),
                bareCalls.percentileMillis(99),
                bareCalls.count(),
                added);
    }

    static String table(
            EngineBenchmarkSettings settings, String engineVersion, Map<String, Map<Operation, Samples>> measured) {
        Map<Operation, Samples> gateway = measured.get("gateway");
        Map<Operation, Samples> driver = measured.get("driver");
        Map<Operation, Samples> direct = measured.get("direct docker-java");
        StringBuilder out = new StringBuilder();
        out.append(String.format(
                Locale.ROOT,
                "Engine: %s %s (%s), image %s; %d iterations per side (after %d warm-up), interleaved, after %d"
                        + " lifecycles warming the gateway's code on the reference driver; %d processors, Java %s.%n%n",
                settings.engine().driver,
                engineVersion,
                settings.host(),
                settings.image(),
                settings.iterations(),
                settings.warmup(),
                settings.gatewayWarmup(),
                Runtime.getRuntime().availableProcessors(),
                Runtime.version()));
        out.append("| operation | gateway p50 | gateway p99 | driver p50 | driver p99 | direct p50 | direct p99 |"
                + " gateway/direct p50 | gateway/direct p99 | driver/direct p50 | driver/direct p99 |\n");
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Operation operation : Operation.values()) {
            double gp50 = gateway.get(operation).percentileMillis(50);
            double gp99 = gateway.get(operation).percentileMillis(99);
            double sp50 = driver.get(operation).percentileMillis(50);
            double sp99 = driver.get(operation).percentileMillis(99);
            double dp50 = direct.get(operation).percentileMillis(50);
            double dp99 = direct.get(operation).percentileMillis(99);
            out.append(String.format(
                    Locale.ROOT,
                    "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f |%n",
                    operation.title,
                    gp50,
                    gp99,
                    sp50,
                    sp99,
                    dp50,
                    dp99,
                    gp50 / dp50,
                    gp99 / dp99,
                    sp50 / dp50,
                    sp99 / dp99));
        }
        out.append("\nLatencies in milliseconds (p99 of 30 samples is the slowest one).\n");
        return out.toString();
    }

    private static DockerClient connect(EngineBenchmarkSettings settings) {
        return EngineClients.connect(settings.host(), API_VERSION, Optional.empty(), Duration.ofSeconds(60));
    }

    /** The engine's version; fails clearly when the engine does not answer or lacks the image. */
    private static String checkEngine(DockerClient client, EngineBenchmarkSettings settings) {
        Version version;
        try {
            version = client.versionCmd().exec();
        } catch (RuntimeException e) {
            throw new IllegalStateException(
                    "the " + settings.engine().driver + " engine does not answer on " + settings.host()
                            + " (start it, e.g. with scripts/bench-engine): " + e.getMessage(),
                    e);
        }
        try {
            client.inspectImageCmd(settings.image()).exec();
        } catch (NotFoundException e) {
            throw new IllegalStateException("the engine has no image " + settings.image()
                    + " (scripts/bench-engine imports the test image; nothing is pulled)");
        }
        return version.getVersion();
    }

    /** Removes whatever either side left behind in this run's workspace (after a failure, say). */
    private static void removeLeftovers(DockerClient client, String workspace) {
        try {
            for (Container container : client.listContainersCmd()
                    .withShowAll(true)
                    .withLabelFilter(Map.of(Labels.WORKSPACE, workspace))
                    .exec()) {
                client.removeContainerCmd(container.getId()).withForce(true).exec();
            }
            var volumes = client.listVolumesCmd()
                    .withFilter("label", List.of(Labels.WORKSPACE + "=" + workspace))
                    .exec()
                    .getVolumes();
            if (volumes != null) {
                for (var volume : volumes) {
                    client.removeVolumeCmd(volume.getName()).exec();
                }
            }
        } catch (RuntimeException e) {
            progress("could not remove the leftovers of workspace " + workspace + ": " + e.getMessage());
        }
    }

    private static void progress(String message) {
        System.err.println("[bench-engine] " + message);
    }
}
