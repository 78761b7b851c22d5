package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.CreateContainerCmd;
import com.github.dockerjava.api.command.CreateVolumeResponse;
import com.github.dockerjava.api.command.InspectVolumeResponse;
import com.github.dockerjava.api.exception.ConflictException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.exception.NotModifiedException;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.Info;
import dev.sandgate.driver.toolkit.Backoff;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxObservation;
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
     * The containers carrying one sandbox id, as the engine's list reported them.
     *
     * @param current the container of the highest generation (the newest one if several share it)
     * @param containerIds every container carrying the id, {@code current} first
     * @param names the names of those containers
     */
    record SandboxContainers(ListedContainer current, List<String> containerIds, Set<String> names) {
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

    /** The containers of this gateway carrying {@code sandboxId}; empty when none does. One list call. */
    Optional<SandboxContainers> find(String sandboxId) {
        List<ListedContainer> listed = list(Map.of(Labels.GATEWAY_ID, gatewayId, Labels.SANDBOX_ID, sandboxId));
        return assemble(listed);
    }

    /**
     * The id of another sandbox of this gateway whose containers carry {@code ref}'s workspace and name, if any. One
     * list call.
     */
    Optional<String> nameHolder(SandboxRef ref) {
        return list(Map.of(Labels.GATEWAY_ID, gatewayId, Labels.WORKSPACE, ref.workspace(), Labels.NAME, ref.name()))
                .stream()
                .map(container -> container.labels().get(Labels.SANDBOX_ID))
                .filter(id -> id != null && !id.equals(ref.id()))
                .findFirst();
    }

    /** The containers of every sandbox of this gateway, by sandbox id. One list call. */
    Map<String, SandboxContainers> findAll() {
        Map<String, List<ListedContainer>> bySandbox = new LinkedHashMap<>();
        for (ListedContainer container : list(Map.of(Labels.GATEWAY_ID, gatewayId))) {
            String sandboxId = container.labels().get(Labels.SANDBOX_ID);
            if (sandboxId != null) {
                bySandbox.computeIfAbsent(sandboxId, id -> new ArrayList<>()).add(container);
            }
        }
        Map<String, SandboxContainers> result = new LinkedHashMap<>();
        bySandbox.forEach((sandboxId, listed) -> assemble(listed).ifPresent(found -> result.put(sandboxId, found)));
        return result;
    }

    private List<ListedContainer> list(Map<String, String> labelFilter) {
        List<Container> listed = call(
                "listing containers",
                () -> client.listContainersCmd()
                        .withShowAll(true)
                        .withLabelFilter(labelFilter)
                        .exec());
        // The engines filter already; checking again costs nothing and does not depend on how each one combines
        // several label filters.
        return listed.stream()
                .map(ListedContainer::of)
                .filter(container -> labelFilter.entrySet().stream()
                        .allMatch(entry ->
                                entry.getValue().equals(container.labels().get(entry.getKey()))))
                .toList();
    }

    /**
     * Ranks a sandbox's containers: the highest generation is current. The list gives creation times in whole
     * seconds, so when several containers share the highest generation (a relaunch of the same generation whose
     * predecessor was not removed) they are inspected for their exact creation times.
     */
    private Optional<SandboxContainers> assemble(List<ListedContainer> listed) {
        if (listed.isEmpty()) {
            return Optional.empty();
        }
        List<ListedContainer> ranked = listed.stream()
                .sorted(Comparator.comparingLong(ListedContainer::rank)
                        .thenComparingLong(ListedContainer::createdSeconds)
                        .reversed())
                .toList();
        ListedContainer current = ranked.getFirst();
        List<ListedContainer> tied = ranked.stream()
                .filter(container -> container.rank() == current.rank())
                .toList();
        ListedContainer best = tied.size() == 1 ? current : newest(tied);
        if (best == null) {
            return Optional.empty();
        }
        List<String> ids = new ArrayList<>();
        ids.add(best.id());
        Set<String> names = new TreeSet<>();
        for (ListedContainer container : ranked) {
            if (!container.id().equals(best.id())) {
                ids.add(container.id());
            }
            names.addAll(container.names());
        }
        return Optional.of(new SandboxContainers(best, ids, names));
    }

    /** The newest of containers of one generation, by their inspected creation times; null if all are gone. */
    private ListedContainer newest(List<ListedContainer> tied) {
        ListedContainer best = null;
        Instant bestCreated = null;
        for (ListedContainer container : tied) {
            Optional<ContainerView> view = inspect(container.id());
            if (view.isPresent()
                    && (bestCreated == null || view.get().createdAt().isAfter(bestCreated))) {
                best = container;
                bestCreated = view.get().createdAt();
            }
        }
        return best;
    }

    /**
     * The observation of a listed container: from the list when it runs, else from an inspect (the exit code and the
     * engine's error decide between STOPPED and FAILED); empty if it no longer exists or its stamps are malformed.
     */
    Optional<SandboxObservation> observe(ListedContainer container) {
        Optional<SandboxObservation> listed = container.observationIfRunning();
        if (listed.isPresent()) {
            return listed;
        }
        return inspect(container.id()).map(ContainerView::observation);
    }

    /**
     * The observation of {@code container}; empty (and logged) if it is gone or its stamps are malformed.
     *
     * @param inspect whether to inspect it even when the list says it runs
     */
    Optional<SandboxObservation> observeQuietly(ListedContainer container, boolean inspect) {
        try {
            return inspect ? inspect(container.id()).map(ContainerView::observation) : observe(container);
        } catch (DriverException e) {
            if (e.code() != DriverErrorCode.INTERNAL) {
                throw e;
            }
            log.warn("Ignoring container {}: {}", container.id(), e.getMessage());
            return Optional.empty();
        }
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

    /**
     * Makes sure {@code ref}'s workspace volume exists, labelled for it. Both engines answer the create of an existing
     * volume with that volume (its own labels), so one call creates or checks it.
     *
     * @throws DriverException FAILED_PRECONDITION if a volume of that name belongs to another sandbox or gateway
     */
    void createVolume(SandboxRef ref) {
        String name = ContainerNaming.volumeName(ref.id());
        CreateVolumeResponse volume;
        try {
            volume = client.createVolumeCmd()
                    .withName(name)
                    .withLabels(ContainerStamps.volumeLabels(ref, gatewayId))
                    .exec();
        } catch (ConflictException e) {
            requireOwnVolume(
                    ref,
                    name,
                    inspectVolume(name)
                            .orElseThrow(() -> EngineErrors.map(e, "creating volume " + name))
                            .getLabels());
            return;
        } catch (RuntimeException e) {
            throw EngineErrors.map(e, "creating volume " + name);
        }
        requireOwnVolume(ref, name, volume.getLabels());
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

    private void requireOwnVolume(SandboxRef ref, String name, Map<String, String> volumeLabels) {
        Map<String, String> labels = volumeLabels == null ? Map.of() : volumeLabels;
        String owner = labels.getOrDefault(Labels.SANDBOX_ID, "");
        String ownerGateway = labels.getOrDefault(Labels.GATEWAY_ID, "");
        if (!owner.equals(ref.id()) || !ownerGateway.equals(gatewayId)) {
            throw new DriverException(
                    DriverErrorCode.FAILED_PRECONDITION,
                    "volume " + name + " exists but is not the workspace of sandbox " + ref.id() + " of this gateway",
                    List.of(new Mismatch(Mismatch.SANDBOX_ID, ref.id(), owner)),
                    null);
        }
    }

    /**
     * Removes {@code ref}'s workspace volume if it exists and carries its stamps.
     *
     * @param verified whether the caller knows the volume is the one whose stamps were checked (it was mounted by the
     *     sandbox's containers from that check until now): then its stamps are not read again
     * @return whether this call removed it
     * @throws DriverException ABORTED if a container (created behind the driver's back) still uses it
     */
    boolean removeVolume(SandboxRef ref, boolean verified) {
        String name = ContainerNaming.volumeName(ref.id());
        if (!verified) {
            Optional<InspectVolumeResponse> existing = inspectVolume(name);
            if (existing.isEmpty()) {
                return false;
            }
            Map<String, String> labels = existing.get().getLabels() == null
                    ? Map.of()
                    : existing.get().getLabels();
            if (!ref.id().equals(labels.get(Labels.SANDBOX_ID)) || !gatewayId.equals(labels.get(Labels.GATEWAY_ID))) {
                log.info(
                        "Not removing volume {}: it does not carry the stamps of sandbox {} of this gateway",
                        name,
                        ref.id());
                return false;
            }
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

    /**
     * Removes {@code ref}'s workspace volume if it carries no sandgate stamps: the one an engine creates on its own
     * when a container is created on a volume name that does not exist. Failures are only logged.
     */
    void removeUnstampedVolumeQuietly(SandboxRef ref) {
        String name = ContainerNaming.volumeName(ref.id());
        try {
            Optional<InspectVolumeResponse> existing = inspectVolume(name);
            if (existing.isPresent()
                    && (existing.get().getLabels() == null
                            || !existing.get().getLabels().containsKey(Labels.SANDBOX_ID))) {
                client.removeVolumeCmd(name).exec();
            }
        } catch (RuntimeException e) {
            log.warn("Could not remove the unstamped volume {}: {}", name, e.getMessage());
        }
    }

    /** Removes the workspace volume of a create that failed; failures are only logged. */
    void removeVolumeQuietly(SandboxRef ref) {
        try {
            removeVolume(ref, false);
        } catch (DriverException e) {
            log.warn(
                    "Could not remove the workspace volume of sandbox {} after a failed create: {}",
                    ref.id(),
                    e.getMessage());
        }
    }

    /** The labels of the container running {@code launch} of {@code recipe} for {@code ref}. */
    Map<String, String> containerLabels(SandboxRef ref, ContainerRecipe recipe, LaunchInput launch) {
        return ContainerStamps.containerLabels(ref, gatewayId, launch, recipe.userLabels());
    }

    /**
     * Creates (does not start) the container of {@code launch} for {@code ref}, with {@code labels}. When the engine
     * answers that it does not have the image, pulls it and creates again: no image check precedes the create.
     *
     * @return the container ID
     * @throws DriverException FAILED_PRECONDITION if {@code name} belongs to a container of another sandbox, ABORTED
     *     if another driver instance created it concurrently, INVALID_ARGUMENT if the engine refuses the settings,
     *     INVALID_ARGUMENT ({@code spec.image}, permanent) with the engine's reason when a needed pull fails,
     *     UNAVAILABLE when the engine cannot be reached
     */
    String createContainer(
            String name, SandboxRef ref, ContainerRecipe recipe, LaunchInput launch, Map<String, String> labels) {
        try {
            return tryCreateContainer(name, ref, recipe, launch, labels);
        } catch (NotFoundException e) {
            if (!EngineErrors.reason(e).toLowerCase(java.util.Locale.ROOT).contains("image")) {
                throw EngineErrors.map(e, "creating container " + name + " for sandbox " + ref.id());
            }
            log.info("Pulling image {}: the {} does not have it", recipe.image(), dialect.engineName());
        }
        dialect.pullImage(client, recipe.image(), settings.pullTimeout());
        try {
            return tryCreateContainer(name, ref, recipe, launch, labels);
        } catch (NotFoundException e) {
            throw EngineErrors.map(e, "creating container " + name + " for sandbox " + ref.id());
        }
    }

    private String tryCreateContainer(
            String name, SandboxRef ref, ContainerRecipe recipe, LaunchInput launch, Map<String, String> labels) {
        HostConfig hostConfig =
                LaunchPolicyMapping.hostConfig(launch.policy().staticPolicy(), ContainerNaming.volumeName(ref.id()));
        dialect.customizeHostConfig(hostConfig);
        try (CreateContainerCmd command = client.createContainerCmd(recipe.image())) {
            command.withName(name)
                    .withLabels(labels)
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
        } catch (NotFoundException e) {
            throw e;
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
     *
     * @return true if the engine started it (or it already ran), false if the engine refused
     */
    boolean startContainer(String containerId) {
        try {
            client.startContainerCmd(containerId).exec();
            return true;
        } catch (NotModifiedException e) {
            return true;
        } catch (NotFoundException e) {
            throw EngineErrors.map(e, "starting container " + containerId);
        } catch (RuntimeException e) {
            DriverException mapped = EngineErrors.map(e, "starting container " + containerId);
            if (mapped.code() == DriverErrorCode.UNAVAILABLE || mapped.code() == DriverErrorCode.DEADLINE_EXCEEDED) {
                throw mapped;
            }
            log.warn("The {} could not start container {}: {}", dialect.engineName(), containerId, mapped.getMessage());
            return false;
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
        var backoff = new Backoff(Duration.ofMillis(20), Duration.ofMillis(500));
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
            backoff.pause("the engine");
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

    /** Removes a container this driver just created and never started; failures are only logged. */
    void removeContainerQuietly(String containerId) {
        try {
            removeContainer(containerId);
        } catch (DriverException e) {
            log.warn("Could not remove container {} again: {}", containerId, e.getMessage());
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

    @Override
    public void close() {
        try {
            client.close();
        } catch (IOException e) {
            log.debug("Closing the engine client failed", e);
        }
    }
}
