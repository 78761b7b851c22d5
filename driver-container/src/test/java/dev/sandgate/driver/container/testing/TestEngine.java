package dev.sandgate.driver.container.testing;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.fail;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.exception.NotFoundException;
import dev.sandgate.driver.container.EngineClients;
import dev.sandgate.driver.container.EngineErrors;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxSpec;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Assumptions;

/**
 * The real engine a test class runs against, found through the environment that {@code scripts/test} exports
 * (through {@code scripts/engines/*.sh}):
 *
 * <ul>
 *   <li>the engine's socket in {@code hostVariable} ({@code SANDGATE_DOCKER_HOST}, {@code SANDGATE_PODMAN_HOST}),
 *       else {@code defaultHost};
 *   <li>the test image, built from busybox-static and imported into the engine, in {@value #IMAGE_VARIABLE}, else
 *       {@value #DEFAULT_IMAGE}.
 * </ul>
 *
 * @param displayName the engine's name for messages
 * @param host the engine's API socket
 * @param hostVariable where {@code host} may be set
 * @param image the test image reference
 */
public record TestEngine(String displayName, String host, String hostVariable, String image) {
    public static final String IMAGE_VARIABLE = "SANDGATE_TEST_IMAGE";
    public static final String DEFAULT_IMAGE = "localhost/sandgate-test:busybox";
    public static final String REQUIRE_ENGINES_PROPERTY = "sandgate.requireEngines";

    /** A command that runs until it is stopped; SIGTERM ends it at once because it is not PID 1. */
    public static final List<String> SLEEP_FOREVER = List.of("sleep", "2147483647");

    private static final Map<String, Optional<String>> PROBED = new ConcurrentHashMap<>();

    public TestEngine {
        requireNonNull(displayName, "displayName is null");
        requireNonNull(host, "host is null");
        requireNonNull(hostVariable, "hostVariable is null");
        requireNonNull(image, "image is null");
    }

    /** The engine named by {@code hostVariable} in the environment, else at {@code defaultHost}. */
    public static TestEngine fromEnvironment(String displayName, String hostVariable, String defaultHost) {
        String host = Optional.ofNullable(System.getenv(hostVariable))
                .filter(value -> !value.isBlank())
                .orElse(defaultHost);
        String image = Optional.ofNullable(System.getenv(IMAGE_VARIABLE))
                .filter(value -> !value.isBlank())
                .orElse(DEFAULT_IMAGE);
        return new TestEngine(displayName, host, hostVariable, image);
    }

    /** A docker-java client for the engine, for out-of-band checks; the caller closes it. */
    public DockerClient client() {
        return EngineClients.connect(host, "1.41", Optional.empty(), Duration.ofMinutes(2));
    }

    /** The driver configuration pointing at this engine: {@code <prefix>.host}. */
    public DriverSettings driverConfig(String prefix) {
        return DriverSettings.EMPTY.with(prefix + ".host", host);
    }

    /** A spec of the test image that runs until stopped. */
    public SandboxSpec runningSpec() {
        return new SandboxSpec(
                image, SLEEP_FOREVER, List.of(), Map.of(), Map.of(), dev.sandgate.spi.ResourceRequests.NONE);
    }

    /**
     * A spec of an image on a loopback registry nothing listens on: the engine answers that it cannot pull it, for
     * good. No traffic leaves the machine.
     */
    public SandboxSpec unpullableSpec() {
        return new SandboxSpec(
                "127.0.0.1:1/sandgate-kit/absent:1",
                SLEEP_FOREVER,
                List.of(),
                Map.of(),
                Map.of(),
                dev.sandgate.spi.ResourceRequests.NONE);
    }

    /**
     * Returns if the engine answers and has the test image. Otherwise the calling test is skipped with the reason, or,
     * under {@code -Dsandgate.requireEngines=true} (CI), fails.
     */
    public void requireAvailable() {
        Optional<String> problem = PROBED.computeIfAbsent(host + " " + image, key -> probe());
        if (problem.isEmpty()) {
            return;
        }
        String message = displayName + " is not usable for tests: " + problem.get()
                + " (scripts/test sets the engines up; or set " + hostVariable + " and " + IMAGE_VARIABLE + ")";
        if (Boolean.getBoolean(REQUIRE_ENGINES_PROPERTY)) {
            fail(message + " [" + REQUIRE_ENGINES_PROPERTY + "=true: a missing engine is a failure]");
        }
        Assumptions.abort(message);
    }

    private Optional<String> probe() {
        try (DockerClient client = EngineClients.connect(host, "1.41", Optional.empty(), Duration.ofSeconds(10))) {
            client.pingCmd().exec();
            try {
                client.inspectImageCmd(image).exec();
            } catch (NotFoundException e) {
                return Optional.of("the engine at " + host + " has no image " + image);
            }
            return Optional.empty();
        } catch (IOException | RuntimeException e) {
            return Optional.of("no engine answers at " + host + ": " + EngineErrors.reason(e));
        }
    }
}
