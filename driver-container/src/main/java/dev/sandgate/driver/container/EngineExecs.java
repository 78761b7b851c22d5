package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectExecResponse;
import com.github.dockerjava.api.exception.BadRequestException;
import com.github.dockerjava.api.exception.ConflictException;
import com.github.dockerjava.api.exception.NotFoundException;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.TerminalSize;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The engine calls of exec, on docker-java: a container's run state, and exec instances (create, inspect, resize),
 * each turning the engine's failures into {@link DriverException}s. Shares the client of the {@link ContainerBackend},
 * which closes it.
 */
final class EngineExecs {
    private final DockerClient client;
    private final ContainerDriverSettings settings;

    EngineExecs(DockerClient client, ContainerDriverSettings settings) {
        this.client = requireNonNull(client, "client is null");
        this.settings = requireNonNull(settings, "settings is null");
    }

    ContainerDriverSettings settings() {
        return settings;
    }

    /**
     * Whether a container's execution runs, and since when, as the engine reports it now.
     *
     * @param running the engine's status is {@code running} (a paused container takes no exec)
     * @param startedAt the engine's {@code StartedAt} of the container's current run
     */
    record RunState(boolean running, String startedAt) {}

    /** The run state of the container with this ID; empty if it no longer exists. */
    Optional<RunState> runState(String containerId) {
        try {
            var state = client.inspectContainerCmd(containerId).exec().getState();
            return Optional.of(new RunState(
                    state != null && "running".equals(state.getStatus()),
                    state == null || state.getStartedAt() == null ? "" : state.getStartedAt()));
        } catch (NotFoundException e) {
            return Optional.empty();
        } catch (RuntimeException e) {
            throw EngineErrors.map(e, "inspecting container " + containerId);
        }
    }

    /**
     * Creates (does not start) an exec instance of {@code command} in the container with this ID, with output attached.
     *
     * @param environment the command's environment as {@code NAME=value} entries
     * @return the exec instance's ID
     * @throws DriverException NOT_FOUND if the container is gone, FAILED_PRECONDITION if it does not run (the
     *     engine's conflict), INVALID_ARGUMENT naming {@code command} if the engine refuses the command
     */
    String createExec(String containerId, ExecCommand command, List<String> environment) {
        try {
            var create = client.execCreateCmd(containerId)
                    .withCmd(command.command().toArray(String[]::new))
                    .withEnv(environment)
                    .withTty(command.tty())
                    .withAttachStdin(command.stdin())
                    .withAttachStdout(true)
                    .withAttachStderr(true);
            command.workingDirectory().ifPresent(create::withWorkingDir);
            return create.exec().getId();
        } catch (ConflictException e) {
            throw new DriverException(
                    DriverErrorCode.FAILED_PRECONDITION,
                    "container " + containerId + " does not run: " + EngineErrors.reason(e),
                    e);
        } catch (BadRequestException e) {
            throw DriverException.invalidArgument("command", "the engine refused it: " + EngineErrors.reason(e));
        } catch (RuntimeException e) {
            throw EngineErrors.map(e, "creating an exec in container " + containerId);
        }
    }

    /** The exec instance with this ID as the engine reports it now. */
    InspectExecResponse inspectExec(String execId) {
        return call(
                "inspecting exec " + execId, () -> client.inspectExecCmd(execId).exec());
    }

    /** Resizes the terminal of the exec instance with this ID. */
    void resizeExec(String execId, TerminalSize size) {
        call("resizing exec " + execId, () -> {
            client.resizeExecCmd(execId).withSize(size.rows(), size.columns()).exec();
            return null;
        });
    }

    private static <T> T call(String action, Supplier<T> call) {
        try {
            return call.get();
        } catch (RuntimeException e) {
            throw EngineErrors.map(e, action);
        }
    }
}
