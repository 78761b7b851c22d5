package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.Version;
import com.github.dockerjava.api.model.VersionComponent;
import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The {@link ComputeDriverProvider} of a driver on an engine that speaks the Docker Engine API. An engine module
 * subclasses it with a public no-argument constructor and lists the subclass in {@code
 * META-INF/services/dev.sandgate.spi.ComputeDriverProvider}.
 */
public abstract class ContainerEngineProvider implements ComputeDriverProvider {
    private static final Duration PING_TIMEOUT = Duration.ofSeconds(5);

    private final String name;
    private final int priority;
    private final String defaultHost;
    private final String hostVariable;
    private final Map<String, String> environment;

    /**
     * @param name the driver's name, also the prefix of its configuration keys ({@code <name>.host}, ...)
     * @param priority the priority when the gateway picks a driver automatically
     * @param defaultHost the engine's usual socket, e.g. {@code unix:///var/run/docker.sock}
     * @param hostVariable the environment variable the engine's CLI reads for its socket, e.g. {@code DOCKER_HOST}
     * @param environment the process environment ({@link System#getenv()}; a parameter for tests)
     */
    protected ContainerEngineProvider(
            String name, int priority, String defaultHost, String hostVariable, Map<String, String> environment) {
        this.name = requireNonNull(name, "name is null");
        this.priority = priority;
        this.defaultHost = requireNonNull(defaultHost, "defaultHost is null");
        this.hostVariable = requireNonNull(hostVariable, "hostVariable is null");
        this.environment = Map.copyOf(requireNonNull(environment, "environment is null"));
    }

    /** What this engine does differently from the Docker Engine, configured from {@code config}. */
    protected abstract EngineDialect dialect(DriverSettings config);

    /**
     * Whether the engine that answered is the one this driver is for (Docker Engine or Podman), from its version
     * components; an explanation when not, empty when it is.
     */
    protected abstract Optional<String> mismatchedEngine(List<String> componentNames);

    @Override
    public final String name() {
        return name;
    }

    @Override
    public final int priority() {
        return priority;
    }

    /**
     * The settings of this engine's dialect beyond {@link ContainerDriverSettings}' (full keys, e.g. {@code
     * podman.ulimits}); none by default.
     */
    protected Set<String> dialectSettings() {
        return Set.of();
    }

    /**
     * The settings this provider reads from {@code config}.
     *
     * @throws DriverException INVALID_ARGUMENT naming a bad setting, or a key under {@code <name>.} that is not one
     */
    public final ContainerDriverSettings settings(DriverSettings config) {
        Set<String> known = new HashSet<>(ContainerDriverSettings.keys(name));
        known.addAll(dialectSettings());
        config.rejectUnknown(name + ".", known, Set.of());
        return ContainerDriverSettings.from(config, name, defaultHost, hostVariable, environment);
    }

    @Override
    public Availability availability(DriverSettings config) {
        ContainerDriverSettings settings;
        EngineDialect dialect;
        try {
            settings = settings(config);
            dialect = dialect(config);
        } catch (DriverException e) {
            return Availability.unavailable(e.getMessage());
        }
        String where = settings.host() + " (from " + settings.hostSource() + ")";
        if (settings.host().getScheme().equals("unix")) {
            Path socket = Path.of(settings.host().getPath());
            if (!Files.exists(socket)) {
                return Availability.unavailable("no " + dialect.engineName() + " socket at " + where + ": set " + name
                        + ".host or " + hostVariable + ", or start the engine");
            }
        }
        try (DockerClient client = EngineClients.connect(
                settings.host().toString(), settings.apiVersion(), settings.tlsCertPath(), PING_TIMEOUT)) {
            client.pingCmd().exec();
            Version version = client.versionCmd().exec();
            List<String> components = version.getComponents() == null
                    ? List.of()
                    : version.getComponents().stream()
                            .map(VersionComponent::getName)
                            .toList();
            Optional<String> mismatch = mismatchedEngine(components);
            if (mismatch.isPresent()) {
                return Availability.unavailable(where + ": " + mismatch.get());
            }
            return Availability.available(dialect.engineName() + " " + version.getVersion() + " (API "
                    + version.getApiVersion() + ") at " + where);
        } catch (IOException | RuntimeException e) {
            return Availability.unavailable(
                    "the " + dialect.engineName() + " at " + where + " does not answer: " + EngineErrors.reason(e));
        }
    }

    @Override
    public ComputeDriver create(DriverSettings config, DriverContext context) {
        requireNonNull(config, "config is null");
        requireNonNull(context, "context is null");
        ContainerDriverSettings settings = settings(config);
        EngineDialect dialect = dialect(config);
        return ContainerDriver.connect(dialect, settings, context);
    }

    /** Whether {@code componentNames} (from the engine's version) contain one whose name contains {@code word}. */
    protected static boolean hasComponent(List<String> componentNames, String word) {
        String lower = word.toLowerCase(Locale.ROOT);
        return componentNames.stream()
                .anyMatch(component ->
                        component != null && component.toLowerCase(Locale.ROOT).contains(lower));
    }
}
