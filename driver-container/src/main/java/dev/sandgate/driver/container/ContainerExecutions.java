package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.DockerClient;
import dev.sandgate.driver.container.ContainerBackend.SandboxContainers;
import dev.sandgate.driver.toolkit.ExecutionFacts;
import dev.sandgate.driver.toolkit.ExecutionFacts.Access;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.LogStream;
import dev.sandgate.spi.SandboxRef;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exec and logs of one execution of a sandbox, by the ID of that execution's container.
 *
 * <p>How an exec is pinned to its execution: a container is one execution. Every launch creates a new container (the
 * generation stamp is one of its labels, fixed at creation) and removes the previous container before the new one
 * starts, and the driver never starts a container that has run (the only start of an existing container finishes a
 * create that never started it). So the container ID resolved for generation G only ever runs G: once G+1 is
 * launched, G's container is stopped and gone, and an engine call on its ID fails instead of reaching G+1. The exec
 * instance is created on that ID; before it is started, the container is inspected again and must still run with the
 * {@code StartedAt} seen before the create, so an exec never starts in a run the gateway did not launch (a container
 * stopped and started again behind the driver's back).
 *
 * <p>Owns the streaming client (no read timeout) that log reads use, and closes it.
 */
final class ContainerExecutions implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ContainerExecutions.class);

    private final ContainerBackend backend;
    private final EngineExecs engine;
    private final DockerClient streamingClient;

    ContainerExecutions(ContainerBackend backend, EngineExecs engine, DockerClient streamingClient) {
        this.backend = requireNonNull(backend, "backend is null");
        this.engine = requireNonNull(engine, "engine is null");
        this.streamingClient = requireNonNull(streamingClient, "streamingClient is null");
    }

    /** Runs {@code command} in the container of execution {@code generation}, by that container's ID. */
    ExecProcess exec(SandboxRef ref, long generation, ExecCommand command, ExecListener listener) {
        String marker = ContainerExec.newMarker();
        List<String> environment = ContainerExec.environment(command, marker);
        String containerId = execution(ref, generation, Access.EXEC);
        EngineExecs.RunState before =
                engine.runState(containerId).orElseThrow(() -> ended(ref, generation, containerId));
        if (!before.running()) {
            throw notRunning(ref, generation, containerId);
        }
        String execId;
        try {
            execId = engine.createExec(containerId, command, environment);
        } catch (DriverException e) {
            throw whyGone(e, ref, generation, containerId);
        }
        EngineExecs.RunState after =
                engine.runState(containerId).orElseThrow(() -> ended(ref, generation, containerId));
        if (!after.running() || !after.startedAt().equals(before.startedAt())) {
            throw notRunning(ref, generation, containerId);
        }
        try {
            return ContainerExec.start(engine, containerId, execId, marker, command, listener);
        } catch (DriverException e) {
            throw whyGone(e, ref, generation, containerId);
        }
    }

    /**
     * Reads the output of the container of execution {@code generation}, by that container's ID. A container is one
     * execution, so its output is that execution's and no other's; the logs of an execution whose container a later
     * launch replaced are gone with it, and asking for them is FAILED_PRECONDITION.
     */
    LogStream logs(SandboxRef ref, long generation, LogQuery query, LogListener listener) {
        String containerId = execution(ref, generation, Access.LOGS);
        try {
            return ContainerLogs.start(
                    streamingClient,
                    containerId,
                    query,
                    listener,
                    engine.settings().requestTimeout());
        } catch (DriverException e) {
            if (e.code() == DriverErrorCode.NOT_FOUND) {
                throw ended(ref, generation, containerId);
            }
            throw e;
        }
    }

    /**
     * The ID of the container of execution {@code generation}: the sandbox's current container, found by the sandbox
     * id, checked by the toolkit's {@link ExecutionFacts} (NOT_FOUND; FAILED_PRECONDITION on an identity or generation
     * mismatch, or for an exec when the engine's list says the container does not run).
     */
    private String execution(SandboxRef ref, long generation, Access access) {
        ListedContainer current = backend.find(ref.id())
                .orElseThrow(() -> DriverException.notFound(ref))
                .current();
        Map<String, String> labels = current.labels();
        new ExecutionFacts(
                        labels.get(Labels.WORKSPACE), labels.get(Labels.NAME), current.generation(), current.running())
                .require(ref, generation, access);
        return current.id();
    }

    /** What an engine's NOT_FOUND or conflict on the resolved container means for the exec. */
    private DriverException whyGone(DriverException e, SandboxRef ref, long generation, String containerId) {
        return switch (e.code()) {
            case NOT_FOUND -> ended(ref, generation, containerId);
            case FAILED_PRECONDITION -> notRunning(ref, generation, containerId);
            default -> e;
        };
    }

    /**
     * Why the container {@code containerId} of execution {@code generation} went away after it was resolved: the
     * sandbox is gone (NOT_FOUND), another execution replaced it (FAILED_PRECONDITION, generation), or it was
     * relaunched at the same generation (ABORTED: the caller may retry).
     */
    private DriverException ended(SandboxRef ref, long generation, String containerId) {
        Optional<SandboxContainers> found = backend.find(ref.id());
        if (found.isEmpty()) {
            return DriverException.notFound(ref);
        }
        long actual = found.get().current().generation();
        if (actual != generation) {
            return DriverException.generationMismatch(ref, generation, actual);
        }
        return DriverException.replaced(ref, containerId, "exec");
    }

    private static DriverException notRunning(SandboxRef ref, long generation, String containerId) {
        log.debug("Container {} of sandbox {} does not run generation {}", containerId, ref, generation);
        return DriverException.notRunning(ref, generation);
    }

    @Override
    public void close() {
        try {
            streamingClient.close();
        } catch (IOException e) {
            log.debug("Closing the streaming client failed", e);
        }
    }
}
