package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.model.Container;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxState;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * One container as the engine's container list reported it: its ID, names, labels and state word. That is enough to
 * find a sandbox's containers, rank them, verify their stamps and tell whether one runs; an observation of a container
 * that does not run needs its exit code and error, which only an inspect gives ({@link ContainerView}).
 *
 * @param id the full container ID
 * @param names the container's names, without the leading slash
 * @param labels the container's labels (fixed when it was created)
 * @param state the engine's state word ({@code created}, {@code running}, {@code exited}, ...)
 * @param createdSeconds when it was created, in seconds since the epoch (0 if the engine did not say)
 */
record ListedContainer(String id, Set<String> names, Map<String, String> labels, String state, long createdSeconds) {
    ListedContainer {
        requireNonNull(id, "id is null");
        names = Set.copyOf(requireNonNull(names, "names is null"));
        labels = Map.copyOf(requireNonNull(labels, "labels is null"));
        requireNonNull(state, "state is null");
    }

    static ListedContainer of(Container summary) {
        Set<String> names = new TreeSet<>();
        if (summary.getNames() != null) {
            for (String name : summary.getNames()) {
                names.add(name.replaceFirst("^/", ""));
            }
        }
        return new ListedContainer(
                summary.getId(),
                names,
                summary.getLabels() == null ? Map.of() : summary.getLabels(),
                summary.getState() == null ? "unknown" : summary.getState(),
                summary.getCreated() == null ? 0 : summary.getCreated());
    }

    /** Whether an execution is under way: running, paused or restarting. */
    boolean running() {
        return switch (state) {
            case "running", "paused", "restarting" -> true;
            default -> false;
        };
    }

    /** The generation stamped on the container; 0 when absent or malformed (such a container ranks last). */
    long rank() {
        return ContainerStamps.generation(labels).orElse(0);
    }

    /** The generation stamped on the container. */
    long generation() {
        return generation(id, labels);
    }

    String policyDigest() {
        return labels.getOrDefault(Labels.POLICY_DIGEST, "");
    }

    /**
     * The observation the list alone supports: that of a running or paused container (whose detail needs nothing
     * more); empty for any other state, which needs an inspect.
     */
    Optional<SandboxObservation> observationIfRunning() {
        return switch (state) {
            case "running" -> Optional.of(observation(id, labels, SandboxState.RUNNING, ""));
            case "paused" -> Optional.of(observation(id, labels, SandboxState.RUNNING, "paused"));
            default -> Optional.empty();
        };
    }

    /** The generation stamped in {@code labels} of container {@code id}; INTERNAL if absent or malformed. */
    static long generation(String id, Map<String, String> labels) {
        return ContainerStamps.generation(labels)
                .orElseThrow(() -> new DriverException(
                        DriverErrorCode.INTERNAL, "container " + id + " carries no valid " + Labels.GENERATION));
    }

    /** The observation of container {@code id} with {@code labels} in {@code state}. */
    static SandboxObservation observation(String id, Map<String, String> labels, SandboxState state, String detail) {
        return new SandboxObservation(
                ContainerStamps.ref(labels, "container " + id),
                generation(id, labels),
                state,
                labels.getOrDefault(Labels.POLICY_DIGEST, ""),
                ContainerStamps.userLabels(labels),
                detail);
    }
}
