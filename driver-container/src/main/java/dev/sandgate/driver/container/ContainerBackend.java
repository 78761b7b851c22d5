package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.CreateContainerCmd;
import com.github.dockerjava.api.command.InspectVolumeResponse;
import com.github.dockerjava.api.exception.ConflictException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.exception.NotModifiedException;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.Info;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxRef;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine operations the container driver needs, on docker-java, each seeing only this gateway's resources and
 * each turning the engine's failures into {@link DriverException}s. Lookups go through labels; mutations take a
 * container ID.
 */
final class ContainerBackend implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ContainerBackend.class);

    private final DockerClient client;
    private final EngineDialect dialect;
    private final ContainerDriverSettings settings;
    private final String gatewayId;

    /**
     * The containers carrying one sandbox id.
     *
     * @param current the container of the highest generation (the newest one if several share it), inspected
     * @param containerIds every container carrying the id, {@code current} included
     * @param names the names of those containers
     */
    record SandboxContainers(ContainerView current, List<String> containerIds, Set<String> names) {
        SandboxContainers {
            requireNonNull(current, "current is null");
            containerIds = List.copyOf(containerIds);
            names = Set.copyOf(names);
        }

        /** Every container but the current one: leftovers of earlier executions. */
        List<String> staleIds() {
            return containerIds.stream().filter(id -> !id.equals(current.id())).toList();
        }
    }

    ContainerBackend(DockerClient client, EngineDialect dialect, ContainerDriverSettings settings, String gatewayId) {
        this.client = requireNonNull(client, "client is null");
        this.dialect = requireNonNull(dialect, "dialect is null");
        this.settings = requireNonNull(settings, "settings is null");
        this.gatewayId = requireNonNull(gatewayId, "gatewayId is null");
    }

    EngineDialect dialect() {
        return dialect;
    }

    ContainerDriverSettings settings() {
        return settings;
    }

    String gatewayId() {
        return gatewayId;
    }

    /** The containers of this gateway carrying {@code sandboxId}; empty when none does. */
    Optional<SandboxContainers> find(String sandboxId) {
        List<Container> summaries = summaries(Map.of(Labels.GATEWAY_ID, gatewayId, Labels.SANDBOX_ID, sandboxId));
        return assemble(summaries);
    }

    /** The containers of every sandbox of this gateway, by sandbox id. */
    Map<String, SandboxContainers> findAll() {
        Map<String, List<Container>> bySandbox = new LinkedHashMap<>();
        for (Container summary : summaries(Map.of(Labels.GATEWAY_ID, gatewayId))) {
            String sandboxId = labels(summary).get(Labels.SANDBOX_ID);
            if (sandboxId != null) {
                bySandbox.computeIfAbsent(sandboxId, id -> new ArrayList<>()).add(summary);
            }
        }
        Map<String, SandboxContainers> result = new LinkedHashMap<>();
        bySandbox.forEach(
                (sandboxId, summaries) -> assemble(summaries).ifPresent(found -> result.put(sandboxId, found)));
        return result;
    }

    private List<Container> summaries(Map<String, String> labelFilter) {
        List<Container> listed = call(
                "listing containers",
                () -> client.listContainersCmd()
                        .withShowAll(true)
                        .withLabelFilter(labelFilter)
                        .exec());
        // The engines filter already; checking again costs nothing and does not depend on how each one combines
        // several label filters.
        return listed.stream()
                .filter(summary -> labelFilter.entrySet().stream()
                        .allMatch(
                                entry -> entry.getValue().equals(labels(summary).get(entry.getKey()))))
                .toList();
    }

    private Optional<SandboxContainers> assemble(List<Container> summaries) {
        if (summaries.isEmpty()) {
            return Optional.empty();
        }
        List<Container> ranked = summaries.stream()
                .sorted(Comparator.comparingLong((Container summary) -> generationOf(summary))
                        .thenComparingLong(summary -> summary.getCreated() == null ? 0 : summary.getCreated())
                        .reversed())
                .toList();
        ContainerView best = null;
        for (Container summary : ranked) {
            if (best != null
                    && generationOf(summary)
                            < ContainerStamps.generation(best.labels()).orElse(0)) {
                break;
            }
            Optional<ContainerView> view = inspect(summary.getId());
            if (view.isPresent() && (best == null || newer(view.get(), best))) {
                best = view.get();
            }
        }
        if (best == null) {
            return Optional.empty();
        }
        List<String> ids = new ArrayList<>();
        Set<String> names = new TreeSet<>();
        for (Container summary : ranked) {
            ids.add(summary.getId());
            if (summary.getNames() != null) {
                for (String name : summary.getNames()) {
                    names.add(name.replaceFirst("^/", ""));
                }
            }
        }
        return Optional.of(new SandboxContainers(best, ids, names));
    }

    private static boolean newer(ContainerView candidate, ContainerView best) {
        long candidateGeneration =
                ContainerStamps.generation(candidate.labels()).orElse(0);
        long bestGeneration = ContainerStamps.generation(best.labels()).orElse(0);
        if (candidateGeneration != bestGeneration) {
            return candidateGeneration > bestGeneration;
        }
        return candidate.createdAt().isAfter(best.createdAt());
    }

    private static long generationOf(Container summary) {
        return ContainerStamps.generation(labels(summary)).orElse(0);
    }

    private static Map<String, String> labels(Container summary) {
        return summary.getLabels() == null ? Map.of() : summary.getLabels();
    }

    /** The container with this ID as the engine reports it now; empty if it no longer exists. */
    Optional<ContainerView> inspect(String containerId) {
        try {
            return Optional.of(
                    ContainerView.of(client.inspectContainerCmd(containerId).exec()));
        } catch (NotFoundException e) {
            return Optional.empty();
        } catch (RuntimeException e) {
            throw EngineErrors.map(e, "inspecting container " + containerId);
        }
    }

    /** Makes sure the engine has {@code image}, pulling it when absent. */
    void ensureImage(String image) {
        try {
            client.inspectImageCmd(image).exec();
            return;
        } catch (NotFoundException e) {
            log.info("Pulling image {}: the {} does not have it", image, dialect.engineName());
        } catch (RuntimeException e) {
            throw EngineErrors.map(e, "inspecting image " + image);
        }
        dialect.pullImage(client, image, settings.pullTimeout());
    }

    /**
     * Makes sure {@code ref}'s workspace volume exists, labelled for it.
     *
     * @return whether this call created it
     * @throws DriverException FAILED_PRECONDITION if a volume of that name belongs to another sandbox or gateway
     */
    boolean ensureVolume(SandboxRef ref) {
        String name = ContainerNaming.volumeName(ref.id());
        Optional<InspectVolumeResponse> existing = inspectVolume(name);
        if (existing.isPresent()) {
            requireOwnVolume(ref, existing.get());
            return false;
        }
        try {
            client.createVolumeCmd()
                    .withName(name)
                    .withLabels(ContainerStamps.volumeLabels(ref, gatewayId))
                    .exec();
            return true;
        } catch (ConflictException e) {
            requireOwnVolume(
                    ref, inspectVolume(name).orElseThrow(() -> EngineErrors.map(e, "creating volume " + name)));
            return false;
        } catch (RuntimeException e) {
            throw EngineErrors.map(e, "creating volume " + name);
        }
    }

    private Optional<InspectVolumeResponse> inspectVolume(String name) {
        try {
            return Optional.of(client.inspectVolumeCmd(name).exec());
        } catch (NotFoundException e) {
            return Optional.empty();
        } catch (RuntimeException e) {
            throw EngineErrors.map(e, "inspecting volume " + name);
        }
    }

    private void requireOwnVolume(SandboxRef ref, InspectVolumeResponse volume) {
        Map<String, String> labels = volume.getLabels() == null ? Map.of() : volume.getLabels();
        String owner = labels.getOrDefault(Labels.SANDBOX_ID, "");
        String ownerGateway = labels.getOrDefault(Labels.GATEWAY_ID, "");
        if (!owner.equals(ref.id()) || !ownerGateway.equals(gatewayId)) {
            throw new DriverException(
                    DriverErrorCode.FAILED_PRECONDITION,
                    "volume " + volume.getName() + " exists but is not the workspace of sandbox " + ref.id()
                            + " of this gateway",
                    List.of(new Mismatch(Mismatch.SANDBOX_ID, ref.id(), owner)),
                    null);
        }
    }

    /**
     * Removes {@code ref}'s workspace volume if it exists and carries its stamps.
     *
     * @return whether this call removed it
     * @throws DriverException ABORTED if a container (created behind the driver's back) still uses it
     */
    boolean removeVolume(SandboxRef ref) {
        String name = ContainerNaming.volumeName(ref.id());
        Optional<InspectVolumeResponse> existing = inspectVolume(name);
        if (existing.isEmpty()) {
            return false;
        }
        Map<String, String> labels =
                existing.get().getLabels() == null ? Map.of() : existing.get().getLabels();
        if (!ref.id().equals(labels.get(Labels.SANDBOX_ID)) || !gatewayId.equals(labels.get(Labels.GATEWAY_ID))) {
            log.info(
                    "Not removing volume {}: it does not carry the stamps of sandbox {} of this gateway",
                    name,
                    ref.id());
            return false;
        }
        try {
            client.removeVolumeCmd(name).exec();
            return true;
        } catch (NotFoundException e) {
            return false;
        } catch (ConflictException e) {
            throw new DriverException(
                    DriverErrorCode.ABORTED,
                    "the workspace volume " + name + " of sandbox " + ref.id()
                            + " is still in use by a container the driver did not expect; nothing more was removed",
                    e);
        } catch (RuntimeException e) {
            throw EngineErrors.map(e, "removing volume " + name);
        }
    }

    /** Removes the volume this driver just created for a launch that then failed; failures are only logged. */
    void removeVolumeQuietly(SandboxRef ref) {
        try {
            removeVolume(ref);
        } catch (DriverException e) {
            log.warn(
                    "Could not remove the workspace volume of sandbox {} after a failed create: {}",
                    ref.id(),
                    e.getMessage());
        }
    }

    /**
     * Creates (does not start) the container of {@code launch} for {@code ref}.
     *
     * @return the container ID
     * @throws DriverException FAILED_PRECONDITION if {@code name} belongs to a container of another sandbox, ABORTED
     *     if another driver instance created it concurrently, INVALID_ARGUMENT if the engine refuses the settings
     */
    String createContainer(String name, SandboxRef ref, ContainerRecipe recipe, LaunchInput launch) {
        HostConfig hostConfig =
                LaunchPolicyMapping.hostConfig(launch.policy().staticPolicy(), ContainerNaming.volumeName(ref.id()));
        dialect.customizeHostConfig(hostConfig);
        try (CreateContainerCmd command = client.createContainerCmd(recipe.image())) {
            command.withName(name)
                    .withLabels(ContainerStamps.containerLabels(ref, gatewayId, launch, recipe.userLabels()))
                    .withEnv(recipe.environment())
                    .withStopTimeout(settings.stopGraceSeconds())
                    .withHostConfig(hostConfig);
            if (!recipe.entrypoint().isEmpty()) {
                command.withEntrypoint(recipe.entrypoint());
            }
            if (!recipe.cmd().isEmpty()) {
                command.withCmd(recipe.cmd());
            }
            String id = command.exec().getId();
            log.debug("Created container {} ({}) for sandbox {} at generation {}", name, id, ref, launch.generation());
            return id;
        } catch (ConflictException e) {
            throw nameTaken(name, ref, e);
        } catch (RuntimeException e) {
            throw EngineErrors.map(e, "creating container " + name + " for sandbox " + ref.id());
        }
    }

    private DriverException nameTaken(String name, SandboxRef ref, ConflictException conflict) {
        Optional<ContainerView> holder = inspect(name);
        if (holder.isEmpty()) {
            return EngineErrors.map(conflict, "creating container " + name + " for sandbox " + ref.id());
        }
        Map<String, String> labels = holder.get().labels();
        String holderId = labels.getOrDefault(Labels.SANDBOX_ID, "");
        if (holderId.equals(ref.id()) && gatewayId.equals(labels.get(Labels.GATEWAY_ID))) {
            return new DriverException(
                    DriverErrorCode.ABORTED,
                    "container " + name + " of sandbox " + ref.id() + " was created concurrently; retry",
                    conflict);
        }
        return new DriverException(
                DriverErrorCode.FAILED_PRECONDITION,
                "the container name " + name + " is taken by a container that does not carry sandbox id " + ref.id(),
                List.of(new Mismatch(Mismatch.SANDBOX_ID, ref.id(), holderId)),
                conflict);
    }

    /**
     * Starts a created container. A start the engine refuses (the runtime cannot execute the command, say) leaves
     * the container with the engine's error, which its observation reports as FAILED; it is logged, not thrown.
     */
    void startContainer(String containerId) {
        try {
            client.startContainerCmd(containerId).exec();
        } catch (NotModifiedException e) {
            // Already running.
        } catch (NotFoundException e) {
            throw EngineErrors.map(e, "starting container " + containerId);
        } catch (RuntimeException e) {
            DriverException mapped = EngineErrors.map(e, "starting container " + containerId);
            if (mapped.code() == DriverErrorCode.UNAVAILABLE || mapped.code() == DriverErrorCode.DEADLINE_EXCEEDED) {
                throw mapped;
            }
            log.warn("The {} could not start container {}: {}", dialect.engineName(), containerId, mapped.getMessage());
        }
    }

    /**
     * Asks the engine to stop a container, waiting the grace period before SIGKILL.
     *
     * @return false if it was not running
     * @throws NotFoundException if the container no longer exists (the caller decides what that means)
     */
    boolean stopContainer(String containerId) {
        try {
            client.stopContainerCmd(containerId)
                    .withTimeout(settings.stopGraceSeconds())
                    .exec();
            return true;
        } catch (NotModifiedException e) {
            return false;
        } catch (NotFoundException e) {
            throw e;
        } catch (RuntimeException e) {
            throw EngineErrors.map(e, "stopping container " + containerId);
        }
    }

    /**
     * Polls until the engine reports the container not running.
     *
     * @return the stopped container; empty if it disappeared meanwhile
     */
    Optional<ContainerView> awaitStopped(String containerId) {
        Instant deadline = Instant.now().plus(settings.stopGracePeriod()).plus(settings.requestTimeout());
        long pauseMillis = 20;
        while (true) {
            Optional<ContainerView> view = inspect(containerId);
            if (view.isEmpty() || !view.get().running()) {
                return view;
            }
            if (Instant.now().isAfter(deadline)) {
                throw new DriverException(
                        DriverErrorCode.DEADLINE_EXCEEDED,
                        "container " + containerId + " was still " + view.get().status() + " after the stop");
            }
            sleep(pauseMillis);
            pauseMillis = Math.min(pauseMillis * 2, 500);
        }
    }

    /**
     * Removes a container, killing it if it still runs; its volumes are kept.
     *
     * @return false if it no longer existed
     */
    boolean removeContainer(String containerId) {
        try {
            client.removeContainerCmd(containerId)
                    .withForce(true)
                    .withRemoveVolumes(false)
                    .exec();
            log.debug("Removed container {}", containerId);
            return true;
        } catch (NotFoundException e) {
            return false;
        } catch (RuntimeException e) {
            throw EngineErrors.map(e, "removing container " + containerId);
        }
    }

    /** The engine's system information; UNAVAILABLE naming the host when the engine does not answer. */
    Info info() {
        try {
            return client.infoCmd().exec();
        } catch (RuntimeException e) {
            throw EngineErrors.unreachable(dialect.engineName(), settings, e);
        }
    }

    private <T> T call(String action, Supplier<T> call) {
        try {
            return call.get();
        } catch (RuntimeException e) {
            throw EngineErrors.map(e, action);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(Duration.ofMillis(millis));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "interrupted while waiting for the engine", e);
        }
    }

    @Override
    public void close() {
        try {
            client.close();
        } catch (IOException e) {
            log.debug("Closing the engine client failed", e);
        }
    }
}
