package dev.sandgate.benchmarks.engine;

import static java.util.Objects.requireNonNull;

import dev.sandgate.benchmarks.BenchmarkOptions;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What one run of {@link EngineBenchmark} measures.
 *
 * @param engine the engine and the gateway driver in front of it
 * @param host the engine's API socket, {@code unix:///path}
 * @param image the image every container runs (present in the engine: nothing is pulled)
 * @param iterations the measured lifecycles per side (at least {@value #MIN_ITERATIONS})
 * @param warmup the unmeasured lifecycles per side before them
 * @param gatewayWarmup lifecycles run first through a gateway on the reference driver, to warm the gateway's own code
 * @param output a file to write the markdown table to, besides standard output
 */
record EngineBenchmarkSettings(
        Engine engine,
        String host,
        String image,
        int iterations,
        int warmup,
        int gatewayWarmup,
        Optional<Path> output) {
    static final int MIN_ITERATIONS = 30;
    static final String DEFAULT_IMAGE = "localhost/sandgate-test:busybox";

    static final String USAGE = """
            Usage: EngineBenchmark [OPTIONS]
            Create, stop, start and delete latency through the gateway (in this JVM, gRPC over loopback Netty, the
            podman or docker driver, SQLite store in a temporary directory), through the same driver called
            directly (no store, no gRPC), and as the same engine calls made directly with docker-java, interleaved
            in one run. Prints a markdown table.
              --engine podman|docker  the engine and driver (default podman)
              --host URI              the engine socket (default: SANDGATE_PODMAN_HOST / SANDGATE_DOCKER_HOST, else
                                      unix:///run/podman/podman.sock / unix:///run/docker.sock)
              --image REF             a busybox image present in the engine (default: SANDGATE_TEST_IMAGE, else
                                      localhost/sandgate-test:busybox)
              --iterations N          measured lifecycles per side, at least 30 (default 30)
              --warmup N              unmeasured lifecycles per side first (default 3)
              --gateway-warmup N      lifecycles run before anything else through a gateway on the reference
                                      driver, so that the gateway's own code is compiled by the JIT, as in a
                                      gateway in service (default 2000; 0: none)
              --output FILE           also write the table to FILE
            """;

    EngineBenchmarkSettings {
        requireNonNull(engine, "engine is null");
        requireNonNull(host, "host is null");
        requireNonNull(image, "image is null");
        requireNonNull(output, "output is null");
        if (iterations < MIN_ITERATIONS) {
            throw new IllegalArgumentException(
                    "--iterations must be at least " + MIN_ITERATIONS + ", got " + iterations);
        }
        if (warmup < 0) {
            throw new IllegalArgumentException("--warmup must not be negative, got " + warmup);
        }
        if (gatewayWarmup < 0) {
            throw new IllegalArgumentException("--gateway-warmup must not be negative, got " + gatewayWarmup);
        }
        if (!host.startsWith("unix://") && !host.startsWith("tcp://")) {
            throw new IllegalArgumentException("--host must be unix:///path or tcp://host:port, got '" + host + "'");
        }
    }

    /** The engines the benchmark knows, with the gateway driver of each. */
    enum Engine {
        PODMAN("podman", "SANDGATE_PODMAN_HOST", "unix:///run/podman/podman.sock"),
        DOCKER("docker", "SANDGATE_DOCKER_HOST", "unix:///run/docker.sock");

        final String driver;
        final String hostVariable;
        final String defaultHost;

        Engine(String driver, String hostVariable, String defaultHost) {
            this.driver = driver;
            this.hostVariable = hostVariable;
            this.defaultHost = defaultHost;
        }

        static Engine named(String name) {
            for (Engine engine : values()) {
                if (engine.driver.equals(name)) {
                    return engine;
                }
            }
            throw new IllegalArgumentException("--engine must be podman or docker, got '" + name + "'");
        }
    }

    static EngineBenchmarkSettings parse(String[] args, Map<String, String> environment) {
        BenchmarkOptions options = BenchmarkOptions.parse(
                args,
                Set.of("--engine", "--host", "--image", "--iterations", "--warmup", "--gateway-warmup", "--output"),
                Set.of());
        Engine engine = options.string("--engine").map(Engine::named).orElse(Engine.PODMAN);
        return new EngineBenchmarkSettings(
                engine,
                options.string("--host")
                        .or(() -> nonBlank(environment.get(engine.hostVariable)))
                        .orElse(engine.defaultHost),
                options.string("--image")
                        .or(() -> nonBlank(environment.get("SANDGATE_TEST_IMAGE")))
                        .orElse(DEFAULT_IMAGE),
                options.integer("--iterations", MIN_ITERATIONS),
                options.integer("--warmup", 3),
                options.integer("--gateway-warmup", 2000),
                options.path("--output"));
    }

    private static Optional<String> nonBlank(String value) {
        return value == null || value.isBlank() ? Optional.empty() : Optional.of(value.trim());
    }
}
