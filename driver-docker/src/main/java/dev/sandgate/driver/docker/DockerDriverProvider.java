package dev.sandgate.driver.docker;

import dev.sandgate.driver.container.ContainerEngineProvider;
import dev.sandgate.driver.container.EngineDialect;
import dev.sandgate.spi.DriverSettings;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code docker} driver: sandboxes as containers of a Docker Engine (20.10 or newer).
 *
 * <p>Configuration keys: {@code docker.host} (default: {@code DOCKER_HOST}, else {@value #DEFAULT_HOST}), {@code
 * docker.tls-cert-path}, {@code docker.api-version}, {@code docker.stop-grace-period}, {@code docker.request-timeout},
 * {@code docker.pull-timeout}, {@code docker.watch-reconnect-timeout}; see {@link
 * dev.sandgate.driver.container.ContainerDriverSettings}.
 */
public final class DockerDriverProvider extends ContainerEngineProvider {
    public static final String NAME = "docker";
    public static final String DEFAULT_HOST = "unix:///var/run/docker.sock";

    public DockerDriverProvider() {
        this(System.getenv());
    }

    /** A provider that reads {@code DOCKER_HOST} from {@code environment} instead of the process environment. */
    public DockerDriverProvider(Map<String, String> environment) {
        super(NAME, 30, DEFAULT_HOST, "DOCKER_HOST", environment);
    }

    @Override
    protected EngineDialect dialect(DriverSettings config) {
        return DockerEngineDialect.INSTANCE;
    }

    @Override
    protected Optional<String> mismatchedEngine(List<String> componentNames) {
        if (hasComponent(componentNames, "podman")) {
            return Optional.of("this socket is served by Podman, not the Docker Engine: use the podman driver");
        }
        return Optional.empty();
    }
}
