package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.command.InspectContainerResponse.ContainerState;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Map;
import java.util.Set;

/**
 * One container as the engine reported it when inspected.
 *
 * @param id the full container ID
 * @param name the container name (without the leading slash)
 * @param labels the container's labels
 * @param status the engine's status word ({@code created}, {@code running}, {@code exited}, ...)
 * @param exitCode the exit code of the last run
 * @param oomKilled whether the last run was killed for exceeding its memory limit
 * @param error the engine's error for the last run, empty if none
 * @param createdAt when the container was created
 * @param recipe what the container runs
 */
record ContainerView(
        String id,
        String name,
        Map<String, String> labels,
        String status,
        long exitCode,
        boolean oomKilled,
        String error,
        Instant createdAt,
        ContainerRecipe recipe) {
    /** Exit codes of a process ended by the stop sequence (SIGINT, SIGKILL, SIGTERM) or on its own with success. */
    private static final Set<Long> ORDERLY_EXIT_CODES = Set.of(0L, 130L, 137L, 143L);

    ContainerView {
        requireNonNull(id, "id is null");
        requireNonNull(name, "name is null");
        labels = Map.copyOf(requireNonNull(labels, "labels is null"));
        requireNonNull(status, "status is null");
        requireNonNull(error, "error is null");
        requireNonNull(createdAt, "createdAt is null");
        requireNonNull(recipe, "recipe is null");
    }

    static ContainerView of(InspectContainerResponse inspect) {
        ContainerState state = inspect.getState();
        Map<String, String> labels = inspect.getConfig().getLabels() == null
                ? Map.of()
                : inspect.getConfig().getLabels();
        String name = inspect.getName() == null ? "" : inspect.getName().replaceFirst("^/", "");
        return new ContainerView(
                inspect.getId(),
                name,
                labels,
                state == null || state.getStatus() == null ? "unknown" : state.getStatus(),
                state == null || state.getExitCodeLong() == null ? 0 : state.getExitCodeLong(),
                state != null && Boolean.TRUE.equals(state.getOOMKilled()),
                state == null || state.getError() == null
                        ? ""
                        : state.getError().strip(),
                parseTime(inspect.getCreated()),
                ContainerRecipe.of(inspect.getConfig()));
    }

    /** Whether an execution is under way: running, paused or restarting. */
    boolean running() {
        return switch (status) {
            case "running", "paused", "restarting" -> true;
            default -> false;
        };
    }

    /** Whether the engine created the container but nobody has tried to start it yet. */
    boolean neverStarted() {
        return status.equals("created") && error.isEmpty() && exitCode == 0;
    }

    /** The generation stamped on the container. */
    long generation() {
        return ListedContainer.generation(id, labels);
    }

    String policyDigest() {
        return labels.getOrDefault(Labels.POLICY_DIGEST, "");
    }

    SandboxRef ref() {
        return ContainerStamps.ref(labels, "container " + id);
    }

    SandboxObservation observation() {
        return ListedContainer.observation(id, labels, state(), detail());
    }

    SandboxState state() {
        return switch (status) {
            case "running", "paused" -> SandboxState.RUNNING;
            case "restarting", "configured", "initialized" -> SandboxState.PROVISIONING;
            case "created" -> error.isEmpty() ? SandboxState.PROVISIONING : SandboxState.FAILED;
            case "removing", "stopping" -> SandboxState.STOPPING;
            case "exited", "stopped" -> exitedState();
            case "dead" -> SandboxState.FAILED;
            default -> SandboxState.UNKNOWN;
        };
    }

    private SandboxState exitedState() {
        if (oomKilled || !error.isEmpty()) {
            return SandboxState.FAILED;
        }
        return ORDERLY_EXIT_CODES.contains(exitCode) ? SandboxState.STOPPED : SandboxState.FAILED;
    }

    String detail() {
        if (!error.isEmpty()) {
            return error;
        }
        return switch (status) {
            case "exited", "stopped" ->
                oomKilled
                        ? "killed for exceeding its memory limit (exit code " + exitCode + ")"
                        : "exited with code " + exitCode;
            case "paused" -> "paused";
            case "running", "created" -> "";
            default -> status;
        };
    }

    private static Instant parseTime(String text) {
        if (text == null || text.isEmpty()) {
            return Instant.EPOCH;
        }
        try {
            return OffsetDateTime.parse(text).toInstant();
        } catch (DateTimeParseException e) {
            return Instant.EPOCH;
        }
    }
}
