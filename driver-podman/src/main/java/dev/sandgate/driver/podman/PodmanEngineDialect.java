package dev.sandgate.driver.podman;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.PullImageResultCallback;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.PullResponseItem;
import dev.sandgate.driver.container.ContainerEventKind;
import dev.sandgate.driver.container.EngineDialect;
import dev.sandgate.driver.container.EngineErrors;
import dev.sandgate.driver.container.PullCallback;
import dev.sandgate.spi.DriverErrorCode;
import java.time.Duration;
import java.util.Map;

/**
 * Podman's Docker-compatible API, where it differs from the Docker Engine:
 *
 * <ul>
 *   <li>Resource limits: every container gets explicit {@link PodmanUlimits}.
 *   <li>Failed pulls: the compat API answers with a stream item that has an error but no {@code status}, on which
 *       docker-java's {@link PullImageResultCallback} throws a NullPointerException. The error is recorded and
 *       reported instead.
 *   <li>Events: a container removal is {@code remove} (Docker: {@code destroy}), an exit may be {@code died}, and
 *       {@code init}, {@code cleanup} and {@code sync} report state changes; {@code exec} and {@code exec_died} are
 *       exec sessions.
 * </ul>
 */
final class PodmanEngineDialect implements EngineDialect {
    private final PodmanUlimits ulimits;

    PodmanEngineDialect(PodmanUlimits ulimits) {
        this.ulimits = requireNonNull(ulimits, "ulimits is null");
    }

    @Override
    public String engineName() {
        return "Podman service";
    }

    @Override
    public void customizeHostConfig(HostConfig hostConfig) {
        hostConfig.withUlimits(ulimits.toUlimits());
    }

    @Override
    public void pullImage(DockerClient client, String image, Duration timeout) {
        StatusLessErrorCallback callback = client.pullImageCmd(image).exec(new StatusLessErrorCallback());
        EngineDialect.awaitPull(callback, image, timeout);
        if (callback.engineError != null) {
            throw EngineErrors.pullFailed(
                    image, DriverErrorCode.INVALID_ARGUMENT, callback.engineError, callback.missingStatus);
        }
    }

    @Override
    public ContainerEventKind classify(String action, Map<String, String> attributes) {
        if (action == null) {
            return ContainerEventKind.IGNORED;
        }
        return switch (action) {
            case "remove" -> ContainerEventKind.REMOVED;
            case "died" -> ContainerEventKind.EXITED;
            case "init", "cleanup", "sync" -> ContainerEventKind.STATE_CHANGED;
            case "exec", "exec_died" -> ContainerEventKind.IGNORED;
            default -> EngineDialect.super.classify(action, attributes);
        };
    }

    /**
     * docker-java's pull callback, which reads the {@code status} of the first item to detect Docker Swarm; Podman's
     * error item has none. The NullPointerException is caught here and the item's error kept as the real cause.
     */
    private static final class StatusLessErrorCallback extends PullCallback {
        private volatile String engineError;
        private volatile NullPointerException missingStatus;

        @Override
        public void onNext(PullResponseItem item) {
            if (item.isErrorIndicated() && engineError == null) {
                engineError =
                        item.getErrorDetail() != null && item.getErrorDetail().getMessage() != null
                                ? item.getErrorDetail().getMessage()
                                : "the engine reported an error without detail";
            }
            try {
                super.onNext(item);
            } catch (NullPointerException e) {
                if (engineError == null) {
                    throw e;
                }
                missingStatus = e;
            }
        }
    }
}
