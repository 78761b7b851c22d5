package dev.sandgate.benchmarks;

import dev.sandgate.driver.remote.RemoteDriverProvider;
import dev.sandgate.driver.remote.RemoteSettings;
import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The reference driver in process versus in a driver host process (sandgate.driver.v1 over a Unix socket), through the
 * SPI in this thread: p50 and p99 per operation and the ratio out / in. Three sides, each over a backend directory of
 * its own, alternating call by call (rotating which side goes first):
 *
 * <ul>
 *   <li>{@code in-process}: the reference driver found through ServiceLoader, as the gateway loads it;
 *   <li>{@code remote}: {@link RemoteDriverProvider} to a driver host running the reference driver, with the gateway's
 *       mutation hook (none: no announcements);
 *   <li>{@code remote+hook}: the same with a hook that does nothing but is not {@link MutationHook#NONE}, as the kit's:
 *       every stop, start and delete adds an announcement and its acknowledgement.
 * </ul>
 *
 * Usage: {@link Settings#USAGE}.
 */
public final class RemoteDriverBenchmark {
    enum Op {
        CREATE,
        GET,
        STOP,
        START,
        DELETE
    }

    private static final LaunchPolicy POLICY = PolicyDocument.DEFAULT.toLaunchPolicy(1);
    /** The reference driver's name and directory setting (it is on the run-time class path only). */
    private static final String REFERENCE = "reference";

    private static final String REFERENCE_DIRECTORY = "reference.directory";

    private RemoteDriverBenchmark() {}

    /** How many lifecycles each side runs unmeasured, then measured. */
    record Settings(int warmup, int iterations) {
        static final String USAGE = """
                Usage: RemoteDriverBenchmark [--warmup N] [--iterations N]
                  --warmup      unmeasured lifecycles per side first (default 300)
                  --iterations  measured lifecycles per side (default 500)
                """;

        static Settings parse(String... args) {
            BenchmarkOptions options = BenchmarkOptions.parse(args, Set.of("--warmup", "--iterations"), Set.of());
            return new Settings(
                    options.integer("--warmup", 300, 0, 1_000_000), options.integer("--iterations", 500, 1, 1_000_000));
        }
    }

    public static void main(String[] args) throws Exception {
        Settings settings = BenchmarkOptions.settingsOrExit(args, Settings.USAGE, Settings::parse);
        int warmup = settings.warmup();
        int iterations = settings.iterations();
        Path root = Files.createTempDirectory("sandgate-remote-bench-");
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty(
                    "sandgate.bench.log", root.resolve("benchmark.log").toString());
            System.setProperty("logback.configurationFile", "sandgate-bench-logback.xml");
        }
        Process host = null;
        List<ComputeDriver> drivers = new ArrayList<>();
        try {
            host = startHost(root);
            DriverSettings remote =
                    DriverSettings.EMPTY.with(RemoteSettings.TARGET, "unix://" + root.resolve("driver.sock"));
            MutationHook noOp = (ref, operation, backendId) -> {};
            ComputeDriverProvider reference = ServiceLoader.load(ComputeDriverProvider.class).stream()
                    .map(ServiceLoader.Provider::get)
                    .filter(provider -> provider.name().equals(REFERENCE))
                    .findFirst()
                    .orElseThrow(() -> new IllegalStateException("no reference driver on the class path"));
            drivers.add(reference.create(
                    DriverSettings.EMPTY.with(
                            REFERENCE_DIRECTORY, root.resolve("in").toString()),
                    context(MutationHook.NONE)));
            drivers.add(new RemoteDriverProvider().create(remote, context(MutationHook.NONE)));
            drivers.add(new RemoteDriverProvider().create(remote, context(noOp)));
            List<String> names = List.of("in-process", "remote", "remote+hook");
            List<Map<Op, long[]>> samples = new ArrayList<>();
            for (int side = 0; side < drivers.size(); side++) {
                Map<Op, long[]> bySide = new EnumMap<>(Op.class);
                for (Op op : Op.values()) {
                    bySide.put(op, new long[iterations]);
                }
                samples.add(bySide);
            }
            for (int i = 0; i < warmup + iterations; i++) {
                for (int k = 0; k < drivers.size(); k++) {
                    int side = (i + k) % drivers.size();
                    lifecycle(drivers.get(side), i < warmup ? null : samples.get(side), i - warmup);
                }
            }
            System.out.printf(
                    "Reference driver, %d measured lifecycles per side after %d warm-up ones, %d processors%n",
                    iterations, warmup, Runtime.getRuntime().availableProcessors());
            System.out.println(
                    "| operation | in-process p50 | remote p50 | remote / in | remote+hook p50 | remote+hook / in"
                            + " | in-process p99 | remote p99 | remote+hook p99 |");
            System.out.println("|---|---|---|---|---|---|---|---|---|");
            for (Op op : Op.values()) {
                var in = new Latencies(samples.get(0).get(op));
                var out = new Latencies(samples.get(1).get(op));
                var hooked = new Latencies(samples.get(2).get(op));
                System.out.printf(
                        Locale.ROOT,
                        "| %s | %.3f | %.3f | %.1f | %.3f | %.1f | %.3f | %.3f | %.3f |%n",
                        op.name().toLowerCase(Locale.ROOT),
                        in.percentileMillis(50),
                        out.percentileMillis(50),
                        out.percentileMillis(50) / in.percentileMillis(50),
                        hooked.percentileMillis(50),
                        hooked.percentileMillis(50) / in.percentileMillis(50),
                        in.percentileMillis(99),
                        out.percentileMillis(99),
                        hooked.percentileMillis(99));
            }
            System.out.println("(milliseconds; sides " + names + ")");
        } finally {
            drivers.forEach(ComputeDriver::close);
            if (host != null) {
                host.destroy();
                host.waitFor(10, TimeUnit.SECONDS);
            }
            try (Stream<Path> paths = Files.walk(root)) {
                paths.sorted(Comparator.reverseOrder())
                        .forEach(path -> path.toFile().delete());
            }
        }
    }

    private static DriverContext context(MutationHook hook) {
        return new DriverContext("bench-remote", Clock.systemUTC(), hook);
    }

    /** create, get, stop, start (generation 2), stop (not counted), delete. */
    private static void lifecycle(ComputeDriver driver, Map<Op, long[]> samples, int index) {
        SandboxRef ref = new SandboxRef(Identifiers.newSandboxId(), "bench", "sandbox");
        SandboxSpec spec = SandboxSpec.ofImage("reference/sleeper");
        time(samples, Op.CREATE, index, () -> driver.create(ref, spec, new LaunchInput(1, POLICY)));
        time(samples, Op.GET, index, () -> driver.get(ref));
        time(samples, Op.STOP, index, () -> driver.stop(ref, OptionalLong.of(1)));
        time(samples, Op.START, index, () -> driver.start(ref, new LaunchInput(2, POLICY)));
        driver.stop(ref, OptionalLong.of(2));
        time(samples, Op.DELETE, index, () -> driver.delete(ref, OptionalLong.empty()));
    }

    private static void time(Map<Op, long[]> samples, Op op, int index, Runnable call) {
        long start = System.nanoTime();
        call.run();
        long elapsed = System.nanoTime() - start;
        if (samples != null) {
            samples.get(op)[index] = elapsed;
        }
    }

    /** A driver host JVM with this tool's class path, serving the reference driver; returns once it serves. */
    private static Process startHost(Path root) throws IOException {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m",
                "--enable-native-access=ALL-UNNAMED",
                "-Dsandgate.bench.log=" + root.resolve("host.log"),
                "-Dlogback.configurationFile=sandgate-bench-logback.xml"));
        if (Runtime.version().feature() >= 23) {
            command.add("--sun-misc-unsafe-memory-access=allow");
        }
        command.addAll(List.of(
                "-cp",
                System.getProperty("java.class.path"),
                "dev.sandgate.driver.host.DriverHostMain",
                "--driver",
                REFERENCE,
                "--listen",
                "unix://" + root.resolve("driver.sock"),
                "--set",
                REFERENCE_DIRECTORY + "=" + root.resolve("out")));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        var reader = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = reader.readLine()) != null) {
            if (line.startsWith("sandgate-driver-host: serving")) {
                Thread.ofPlatform().daemon(true).start(() -> drain(reader));
                return process;
            }
        }
        throw new IOException("the driver host exited before serving");
    }

    private static void drain(BufferedReader reader) {
        try {
            while (reader.readLine() != null) {
                // the host's log is not part of the figures
            }
        } catch (IOException e) {
            // the host is gone
        }
    }
}
