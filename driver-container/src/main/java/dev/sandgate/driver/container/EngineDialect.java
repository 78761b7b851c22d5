package dev.sandgate.driver.container;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.exception.DockerClientException;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.model.HostConfig;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What differs between engines that speak the Docker Engine API. The defaults are the Docker Engine's behaviour; an
 * engine module overrides what its engine does differently.
 *
 * <p>Implementations are immutable and thread-safe.
 */
public interface EngineDialect {
    /** The engine's name for messages, read after "the": {@code Docker Engine}, {@code Podman service}. */
    String engineName();

    /**
     * Adds engine-specific settings to the host configuration of every container the driver creates, after the
     * launch policy has been applied.
     */
    default void customizeHostConfig(HostConfig hostConfig) {}

    /**
     * Pulls {@code image}, blocking until the engine has it, for at most {@code timeout}.
     *
     * @throws DriverException INVALID_ARGUMENT ({@code spec.image}) with the engine's reason when the engine answers that
     *     the pull failed, UNAVAILABLE when the engine cannot be reached,
     *     DEADLINE_EXCEEDED after {@code timeout}
     */
    default void pullImage(DockerClient client, String image, Duration timeout) {
        awaitPull(client.pullImageCmd(image).exec(new PullCallback()), image, timeout);
    }

    /** Maps a container event's action (e.g. {@code die}) to what it means for a watch. */
    default ContainerEventKind classify(String action, Map<String, String> attributes) {
        if (action == null) {
            return ContainerEventKind.IGNORED;
        }
        if (action.startsWith("exec_") || action.startsWith("health_status")) {
            return ContainerEventKind.IGNORED;
        }
        return switch (action) {
            case "destroy" -> ContainerEventKind.REMOVED;
            case "die" -> ContainerEventKind.EXITED;
            case "oom" -> ContainerEventKind.OUT_OF_MEMORY;
            case "attach", "detach", "resize", "top", "export", "copy", "commit", "archive-path", "extract-to-dir" ->
                ContainerEventKind.IGNORED;
            default -> ContainerEventKind.STATE_CHANGED;
        };
    }

    /** Waits for a pull started with a docker-java callback and turns its failure into a {@link DriverException}. */
    static void awaitPull(PullCallback callback, String image, Duration timeout) {
        try {
            if (!callback.awaitCompletion(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new DriverException(
                        DriverErrorCode.DEADLINE_EXCEEDED,
                        "pulling image '" + image + "' did not finish within " + timeout);
            }
            if (callback.failure().isPresent()) {
                Throwable failure = callback.failure().get();
                throw EngineErrors.pullFailed(
                        image,
                        failure instanceof RuntimeException runtime ? runtime : new IllegalStateException(failure));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DriverException(
                    DriverErrorCode.UNAVAILABLE, "interrupted while pulling image '" + image + "'", e);
        } catch (DockerException | DockerClientException e) {
            throw EngineErrors.pullFailed(image, e);
        } finally {
            try {
                callback.close();
            } catch (java.io.IOException e) {
                // The stream is already finished or broken; nothing more to release.
            }
        }
    }
}
