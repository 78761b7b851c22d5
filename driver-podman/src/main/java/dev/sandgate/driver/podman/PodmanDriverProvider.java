package dev.sandgate.driver.podman;

import dev.sandgate.driver.container.ContainerEngineProvider;
import dev.sandgate.driver.container.EngineDialect;
import dev.sandgate.spi.DriverSettings;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The {@code podman} driver: sandboxes as containers of Podman (4.x), through the Docker-compatible API that {@code
 * podman system service} serves.
 *
 * <p>Configuration keys: {@code podman.host} (default: {@code CONTAINER_HOST}, else {@value #DEFAULT_HOST}; a
 * rootless user's socket is {@code unix:///run/user/<uid>/podman/podman.sock}), {@code podman.ulimits} (see {@link
 * PodmanUlimits}), and {@code podman.tls-cert-path}, {@code podman.api-version}, {@code podman.stop-grace-period}, {@code
 * podman.request-timeout}, {@code podman.pull-timeout}, {@code podman.watch-reconnect-timeout} as described in {@link
 * dev.sandgate.driver.container.ContainerDriverSettings}.
 */
public final class PodmanDriverProvider extends ContainerEngineProvider {
    public static final String NAME = "podman";
    public static final String DEFAULT_HOST = "unix:///run/podman/podman.sock";

    public PodmanDriverProvider() {
        this(System.getenv());
    }

    /** A provider that reads {@code CONTAINER_HOST} from {@code environment} instead of the process environment. */
    public PodmanDriverProvider(Map<String, String> environment) {
        super(NAME, 20, DEFAULT_HOST, "CONTAINER_HOST", environment);
    }

    @Override
    protected Set<String> dialectSettings() {
        return Set.of(PodmanUlimits.KEY);
    }

    @Override
    protected EngineDialect dialect(DriverSettings config) {
        return new PodmanEngineDialect(PodmanUlimits.from(config));
    }

    @Override
    protected Optional<String> mismatchedEngine(List<String> componentNames) {
        if (!hasComponent(componentNames, "podman")) {
            return Optional.of(
                    "this socket is not served by Podman (components: " + componentNames + "): use the docker driver");
        }
        return Optional.empty();
    }
}
