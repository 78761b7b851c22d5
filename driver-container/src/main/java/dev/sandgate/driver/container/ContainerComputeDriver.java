package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Info;
import dev.sandgate.driver.container.ContainerBackend.SandboxContainers;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.StartResult;
import dev.sandgate.spi.StopResult;
import dev.sandgate.spi.WatchSubscription;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link ComputeDriver} on a container engine that speaks the Docker Engine API (Docker, Podman).
 *
 * <h2>Backend model</h2>
 *
 * A sandbox is a workspace volume ({@link ContainerNaming#volumeName}) plus one container per execution generation.
 * Both carry the stamps of {@link ContainerStamps}. A container's labels and settings are fixed when it is created, so
 * every start creates a new container from the committed launch input on the same volume, and only then removes the
 * previous container by its ID. What the sandbox runs (image, command, environment, user labels) lives in the current
 * container's configuration and is read back from it for the next execution: the driver keeps no state of its own
 * beyond per-sandbox locks.
 *
 * <h2>Identity</h2>
 *
 * A sandbox's containers are found by the labels {@code sandgate.dev/gateway-id} and {@code sandgate.dev/sandbox-id},
 * never by name; the one with the highest generation is current. Its workspace and name stamps must match the
 * request, else FAILED_PRECONDITION before anything changes. Mutations take the container ID found that way, after
 * {@link MutationHook#beforeMutation}: a container that is gone by then (removed or replaced behind the driver's back)
 * makes the call fail with ABORTED without touching its replacement.
 *
 * <p>Thread-safe. Lifecycle calls on one sandbox are serialized by a per-id lock.
 */
public final class ContainerComputeDriver implements ComputeDriver {
    private static final Logger log = LoggerFactory.getLogger(ContainerComputeDriver.class);

    private final ContainerBackend backend;
    private final DriverContext context;
    private final KeyedLocks locks = new KeyedLocks();
    private final Duration lockTimeout;
    private final Set<ContainerWatch> watches = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final DriverCapabilities capabilities;

    private ContainerComputeDriver(
            ContainerBackend backend, DriverCapabilities capabilities, Duration lockTimeout, DriverContext context) {
        this.backend = backend;
        this.capabilities = capabilities;
        this.lockTimeout = lockTimeout;
        this.context = context;
    }

    /**
     * Connects to the engine at {@code settings.host()} and asks it what it can enforce (a rootless engine on cgroup v1
     * cannot apply memory, CPU and pids limits).
     *
     * @param dialect what the engine does differently from the Docker Engine
     * @throws DriverException UNAVAILABLE naming the host when the engine does not answer
     */
    public static ContainerComputeDriver connect(
            EngineDialect dialect, ContainerDriverSettings settings, DriverContext context) {
        requireNonNull(dialect, "dialect is null");
        requireNonNull(settings, "settings is null");
        requireNonNull(context, "context is null");
        DockerClient client =
                EngineClients.connect(settings, settings.requestTimeout().plus(settings.stopGracePeriod()));
        var backend = new ContainerBackend(client, dialect, settings, context.gatewayId());
        try {
            Info info = backend.info();
            DriverCapabilities capabilities =
                    LaunchPolicyMapping.capabilities(info.getSecurityOptions(), info.getCGroupVersion());
            if (!capabilities.equals(LaunchPolicyMapping.CAPABILITIES)) {
                log.warn(
                        "The {} at {} runs rootless on cgroup v1 and cannot apply memory, CPU or pids limits:"
                                + " policies using them are refused",
                        dialect.engineName(),
                        settings.host());
            }
            Duration lockTimeout =
                    settings.stopGracePeriod().plus(settings.requestTimeout().multipliedBy(3));
            return new ContainerComputeDriver(backend, capabilities, lockTimeout, context);
        } catch (RuntimeException e) {
            backend.close();
            throw e;
        }
    }

    @Override
    public DriverCapabilities capabilities() {
        return capabilities;
    }

    @Override
    public void validate(SandboxSpec spec, LaunchInput launch) {
        requireNonNull(spec, "spec is null");
        requireNonNull(launch, "launch is null");
        ImageReferences.requireValid(spec.image());
        validateLaunch(launch);
    }

    private void validateLaunch(LaunchInput launch) {
        capabilities().requireEnforceable(launch.policy());
        LaunchPolicyMapping.requireApplicable(launch.policy().staticPolicy());
    }

    @Override
    public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
        requireNonNull(ref, "ref is null");
        validate(spec, launch);
        return locked(ref, () -> {
            Optional<SandboxContainers> existing = backend.find(ref.id());
            if (existing.isPresent()) {
                return createOverExisting(ref, launch, existing.get().current());
            }
            backend.ensureImage(spec.image());
            boolean createdVolume = backend.ensureVolume(ref);
            String containerId;
            try {
                containerId = backend.createContainer(
                        ContainerNaming.containerName(ref, launch.generation(), 1),
                        ref,
                        ContainerRecipe.of(spec),
                        launch);
            } catch (DriverException e) {
                if (createdVolume) {
                    backend.removeVolumeQuietly(ref);
                }
                throw e;
            }
            backend.startContainer(containerId);
            return new CreateResult(observe(ref, containerId, "create"), true);
        });
    }

    private CreateResult createOverExisting(SandboxRef ref, LaunchInput launch, ContainerView current) {
        requireIdentity(ref, current);
        long generation = current.generation();
        String digest = current.policyDigest();
        if (generation == launch.generation() && digest.equals(launch.policy().digest())) {
            if (current.neverStarted()) {
                // An earlier create stopped between creating the container and starting it: finish the launch.
                context.mutationHook().beforeMutation(ref, MutationHook.Operation.START, current.id());
                try {
                    backend.startContainer(current.id());
                } catch (DriverException e) {
                    throw e.code() == DriverErrorCode.NOT_FOUND ? replaced(ref, current.id(), "create") : e;
                }
                return new CreateResult(observe(ref, current.id(), "create"), false);
            }
            return new CreateResult(current.observation(), false);
        }
        throw new DriverException(
                DriverErrorCode.ALREADY_EXISTS,
                "sandbox " + ref.id() + " already exists at generation " + generation + " with policy " + digest
                        + ", not at generation " + launch.generation() + " with policy "
                        + launch.policy().digest());
    }

    @Override
    public SandboxObservation get(SandboxRef ref) {
        requireNonNull(ref, "ref is null");
        ContainerView current = resolve(ref).current();
        return current.observation();
    }

    @Override
    public List<SandboxObservation> list() {
        List<SandboxObservation> observations = new ArrayList<>();
        for (SandboxContainers found : backend.findAll().values()) {
            observeQuietly(found.current()).ifPresent(observations::add);
        }
        return observations;
    }

    /** The observation of {@code view}; empty (and logged) if its stamps are malformed. */
    static Optional<SandboxObservation> observeQuietly(ContainerView view) {
        try {
            return Optional.of(view.observation());
        } catch (DriverException e) {
            log.warn("Ignoring container {}: {}", view.id(), e.getMessage());
            return Optional.empty();
        }
    }

    @Override
    public StartResult start(SandboxRef ref, LaunchInput launch) {
        requireNonNull(ref, "ref is null");
        requireNonNull(launch, "launch is null");
        validateLaunch(launch);
        return locked(ref, () -> {
            SandboxContainers found = resolve(ref);
            ContainerView current = found.current();
            long generation = current.generation();
            String digest = current.policyDigest();
            long requested = launch.generation();
            int attempt = 1;
            if (generation == requested) {
                if (!digest.equals(launch.policy().digest())) {
                    throw new DriverException(
                            DriverErrorCode.FAILED_PRECONDITION,
                            "sandbox " + ref.id() + " carries generation " + generation + " with another policy",
                            List.of(new Mismatch(
                                    Mismatch.POLICY_DIGEST, launch.policy().digest(), digest)),
                            null);
                }
                if (current.running()) {
                    return new StartResult(current.observation(), false);
                }
                attempt = nextAttempt(ref, requested, found.names());
            } else if (generation > requested) {
                throw new DriverException(
                        DriverErrorCode.FAILED_PRECONDITION,
                        "launch input generation " + requested + " is older than generation " + generation
                                + " of sandbox " + ref.id(),
                        List.of(new Mismatch(Mismatch.GENERATION, Long.toString(requested), Long.toString(generation))),
                        null);
            } else if (current.running()) {
                throw new DriverException(
                        DriverErrorCode.FAILED_PRECONDITION,
                        "sandbox " + ref.id() + " runs generation " + generation + "; stop it before launching "
                                + requested,
                        List.of(new Mismatch(Mismatch.GENERATION, Long.toString(requested), Long.toString(generation))),
                        null);
            }
            return launch(ref, launch, found, attempt);
        });
    }

    private StartResult launch(SandboxRef ref, LaunchInput launch, SandboxContainers found, int attempt) {
        ContainerView previous = found.current();
        ContainerRecipe recipe = previous.recipe();
        backend.ensureImage(recipe.image());
        context.mutationHook().beforeMutation(ref, MutationHook.Operation.START, previous.id());
        if (backend.inspect(previous.id()).isEmpty()) {
            throw replaced(ref, previous.id(), "start");
        }
        backend.ensureVolume(ref);
        String containerId = backend.createContainer(
                ContainerNaming.containerName(ref, launch.generation(), attempt), ref, recipe, launch);
        backend.startContainer(containerId);
        for (String oldId : found.containerIds()) {
            if (!oldId.equals(previous.id())) {
                context.mutationHook().beforeMutation(ref, MutationHook.Operation.START, oldId);
            }
            backend.removeContainer(oldId);
        }
        return new StartResult(observe(ref, containerId, "start"), true);
    }

    private static int nextAttempt(SandboxRef ref, long generation, Set<String> takenNames) {
        int attempt = 1;
        while (takenNames.contains(ContainerNaming.containerName(ref, generation, attempt))) {
            attempt++;
        }
        return attempt;
    }

    @Override
    public StopResult stop(SandboxRef ref, OptionalLong expectedGeneration) {
        requireNonNull(ref, "ref is null");
        requireNonNull(expectedGeneration, "expectedGeneration is null");
        return locked(ref, () -> {
            ContainerView current = resolve(ref).current();
            requireGeneration(ref, expectedGeneration, current);
            if (!current.running()) {
                return new StopResult(current.observation(), false);
            }
            context.mutationHook().beforeMutation(ref, MutationHook.Operation.STOP, current.id());
            boolean stoppedNow;
            try {
                stoppedNow = backend.stopContainer(current.id());
            } catch (NotFoundException e) {
                throw replaced(ref, current.id(), "stop");
            }
            ContainerView stopped =
                    backend.awaitStopped(current.id()).orElseThrow(() -> replaced(ref, current.id(), "stop"));
            log.debug("Stopped container {} of sandbox {}", current.id(), ref);
            return new StopResult(stopped.observation(), stoppedNow);
        });
    }

    @Override
    public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
        requireNonNull(ref, "ref is null");
        requireNonNull(expectedGeneration, "expectedGeneration is null");
        return locked(ref, () -> {
            Optional<SandboxContainers> found = backend.find(ref.id());
            if (found.isEmpty()) {
                // A create that failed half-way may have left the workspace volume: it goes too.
                return new DeleteResult(backend.removeVolume(ref));
            }
            ContainerView current = found.get().current();
            requireIdentity(ref, current);
            requireGeneration(ref, expectedGeneration, current);
            context.mutationHook().beforeMutation(ref, MutationHook.Operation.DELETE, current.id());
            if (!backend.removeContainer(current.id())) {
                throw replaced(ref, current.id(), "delete");
            }
            for (String staleId : found.get().staleIds()) {
                context.mutationHook().beforeMutation(ref, MutationHook.Operation.DELETE, staleId);
                backend.removeContainer(staleId);
            }
            backend.removeVolume(ref);
            log.debug("Deleted sandbox {}", ref);
            return new DeleteResult(true);
        });
    }

    @Override
    public WatchSubscription watch(SandboxWatcher watcher) {
        requireNonNull(watcher, "watcher is null");
        if (closed.get()) {
            throw new DriverException(DriverErrorCode.FAILED_PRECONDITION, "the driver is closed");
        }
        ContainerWatch watch = new ContainerWatch(backend, watcher, watches::remove);
        watches.add(watch);
        try {
            watch.start();
        } catch (RuntimeException e) {
            watch.close();
            throw e;
        }
        return watch;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            for (ContainerWatch watch : List.copyOf(watches)) {
                watch.close();
            }
            backend.close();
        }
    }

    /** The containers of {@code ref}, verified: NOT_FOUND if none carries the id, FAILED_PRECONDITION on mismatch. */
    private SandboxContainers resolve(SandboxRef ref) {
        SandboxContainers found = backend.find(ref.id()).orElseThrow(() -> DriverException.notFound(ref));
        requireIdentity(ref, found.current());
        return found;
    }

    private static void requireIdentity(SandboxRef ref, ContainerView view) {
        Map<String, String> labels = view.labels();
        String workspace = labels.getOrDefault(dev.sandgate.spi.Labels.WORKSPACE, "");
        String name = labels.getOrDefault(dev.sandgate.spi.Labels.NAME, "");
        if (!ref.workspace().equals(workspace) || !ref.name().equals(name)) {
            throw DriverException.identityMismatch(ref, workspace, name);
        }
    }

    private static void requireGeneration(SandboxRef ref, OptionalLong expected, ContainerView current) {
        if (expected.isPresent() && expected.getAsLong() != current.generation()) {
            throw DriverException.generationMismatch(ref, expected.getAsLong(), current.generation());
        }
    }

    private SandboxObservation observe(SandboxRef ref, String containerId, String operation) {
        return backend.inspect(containerId)
                .map(ContainerView::observation)
                .orElseThrow(() -> new DriverException(
                        DriverErrorCode.ABORTED,
                        "container " + containerId + " of sandbox " + ref.id() + " disappeared right after the "
                                + operation));
    }

    private static DriverException replaced(SandboxRef ref, String containerId, String operation) {
        return new DriverException(
                DriverErrorCode.ABORTED,
                "container " + containerId + " of sandbox " + ref.id() + " was removed or replaced between lookup and "
                        + operation + "; nothing was changed");
    }

    private <T> T locked(SandboxRef ref, java.util.function.Supplier<T> operation) {
        return locks.call(ref.id(), lockTimeout, operation);
    }
}
