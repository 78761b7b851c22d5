package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Info;
import dev.sandgate.driver.container.ContainerBackend.SandboxContainers;
import dev.sandgate.driver.container.ContainerIndex.Known;
import dev.sandgate.driver.toolkit.Identity;
import dev.sandgate.driver.toolkit.KeyedLocks;
import dev.sandgate.driver.toolkit.StartDecision;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.LogStream;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
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
 * every start creates a new container from the committed launch input on the same volume, removes the previous
 * container by its ID, and only then starts the new one. What the sandbox runs (image, command, environment, user
 * labels) lives in the current container's configuration and is read back from it for the next execution. The engine
 * is the only source of truth; the driver keeps per-sandbox locks and a {@link ContainerIndex} of facts about container
 * IDs it created or resolved, which saves engine round trips and is dropped whenever it may be stale.
 *
 * <h2>Identity</h2>
 *
 * A sandbox's containers are found by the labels {@code sandgate.dev/gateway-id} and {@code sandgate.dev/sandbox-id},
 * never by name; the one with the highest generation is current. Its workspace and name stamps must match the
 * request, else FAILED_PRECONDITION before anything changes; a create of a new id whose workspace and name another
 * sandbox's containers carry is FAILED_PRECONDITION too (container names carry the id, so the engine would not
 * refuse it); stop and delete check the expected generation against
 * its generation stamp. Stop and delete take the container ID and labels from the index when it has them and they agree
 * with the call (labels are immutable, so the checks are the same), else from the engine's list: an entry whose stamps
 * or generation disagree may be stale (another driver instance, e.g. another gateway replica, relaunched the sandbox)
 * and is dropped, and the engine's answer decides; create and start always list. Mutations take
 * the container ID resolved that way, after {@link MutationHook#beforeMutation}: a container that is gone by then
 * (removed or replaced behind the driver's back) makes the call fail with ABORTED without touching its replacement,
 * and the index forgets the sandbox so that a retry lists again.
 *
 * <h2>Engine calls</h2>
 *
 * <ul>
 *   <li>create: list; [list by workspace and name, for a new id]; create the volume (the engines answer an existing volume's create with that volume, whose
 *       stamps are checked); create the container (on "no such image": pull, create again); start.
 *   <li>stop: [list if not indexed]; stop; inspect until the engine reports it stopped (the exit code decides
 *       STOPPED or FAILED).
 *   <li>start: list; [inspect the previous container for its recipe if not indexed]; create; remove the previous
 *       container; start.
 *   <li>delete: [list if not indexed]; remove the container(s); [inspect the volume's stamps unless this instance
 *       checked them at create]; remove the volume.
 * </ul>
 *
 * A successful start is reported as RUNNING without another inspect; a refused one is inspected for the engine's
 * error.
 *
 * <h2>Watch</h2>
 *
 * A watch ({@link ContainerWatch}) looks at a sandbox after its engine events (an inspect of the container the index
 * names as current, else a list and an inspect), but not while a lifecycle call holds the sandbox's lock: those looks
 * would land on the engine between the call's own requests (Podman serializes work per container, and its list takes
 * every container's lock). It looks once the call has ended instead.
 *
 * <p>Thread-safe. Lifecycle calls on one sandbox are serialized by a per-id lock.
 */
public final class ContainerDriver implements ComputeDriver {
    private static final Logger log = LoggerFactory.getLogger(ContainerDriver.class);

    private final ContainerBackend backend;
    private final DriverContext context;
    private final KeyedLocks locks = new KeyedLocks();
    private final ContainerIndex index = new ContainerIndex();
    private final Duration lockTimeout;
    private final Set<ContainerWatch> watches = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final DriverCapabilities capabilities;
    private final ContainerExecutions executions;

    private ContainerDriver(
            ContainerBackend backend,
            ContainerExecutions executions,
            DriverCapabilities capabilities,
            Duration lockTimeout,
            DriverContext context) {
        this.backend = backend;
        this.executions = executions;
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
    public static ContainerDriver connect(
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
            // Exec streams standard input over a connection of its own (EngineAttach), which speaks no TLS.
            DriverCapabilities withStreams = capabilities.withExecAndLogs(EngineAttach.supports(settings), true);
            var executions = new ContainerExecutions(
                    backend, new EngineExecs(client, settings), EngineClients.connect(settings, null));
            return new ContainerDriver(backend, executions, withStreams, lockTimeout, context);
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
            long version = index.version(ref.id());
            Optional<SandboxContainers> existing = backend.find(ref.id());
            if (existing.isPresent()) {
                return createOverExisting(ref, launch, existing.get(), version);
            }
            Identity.requireNameFree(ref, backend.nameHolder(ref));
            ContainerRecipe recipe = ContainerRecipe.of(spec);
            Map<String, String> labels = backend.containerLabels(ref, recipe, launch);
            String name = ContainerNaming.containerName(ref, launch.generation(), 1);
            backend.createVolume(ref);
            String containerId = createContainer(name, ref, recipe, launch, labels);
            boolean started = backend.startContainer(containerId);
            SandboxObservation observation = started
                    ? ListedContainer.observation(containerId, labels, SandboxState.RUNNING, "")
                    : observe(ref, containerId, "create");
            index.put(
                    ref.id(), new Known(containerId, labels, Optional.of(recipe), List.of(containerId), true), version);
            return new CreateResult(observation, true);
        });
    }

    /** Creates a new sandbox's container; on failure removes the workspace volume the create made for it. */
    private String createContainer(
            String name, SandboxRef ref, ContainerRecipe recipe, LaunchInput launch, Map<String, String> labels) {
        index.creating(ref.id(), name);
        Optional<String> created = Optional.empty();
        try {
            created = Optional.of(backend.createContainer(name, ref, recipe, launch, labels));
            return created.get();
        } catch (DriverException e) {
            // No container carried the id when the create began, so the volume belongs to no execution. ABORTED means
            // another driver instance created the container concurrently: its volume stays.
            if (e.code() != DriverErrorCode.ABORTED) {
                backend.removeVolumeQuietly(ref);
            }
            throw e;
        } finally {
            index.created(ref.id(), name, created);
        }
    }

    private CreateResult createOverExisting(SandboxRef ref, LaunchInput launch, SandboxContainers found, long version) {
        ListedContainer current = found.current();
        requireIdentity(ref, current.labels());
        index.seen(ref.id(), found.containerIds());
        long generation = current.generation();
        String digest = current.policyDigest();
        if (generation == launch.generation() && digest.equals(launch.policy().digest())) {
            if (!current.running()) {
                ContainerView view =
                        backend.inspect(current.id()).orElseThrow(() -> replaced(ref, current.id(), "create"));
                if (view.neverStarted()) {
                    // An earlier create stopped between creating the container and starting it: finish the launch.
                    context.mutationHook().beforeMutation(ref, MutationHook.Operation.START, current.id());
                    try {
                        backend.startContainer(current.id());
                    } catch (DriverException e) {
                        throw e.code() == DriverErrorCode.NOT_FOUND ? replaced(ref, current.id(), "create") : e;
                    }
                    return new CreateResult(observe(ref, current.id(), "create"), false);
                }
                return new CreateResult(view.observation(), false);
            }
            index.put(ref.id(), known(found, Optional.empty(), false), version);
            return new CreateResult(observeListed(ref, current, "create"), false);
        }
        throw DriverException.alreadyExists(ref, launch, generation, digest);
    }

    @Override
    public SandboxObservation get(SandboxRef ref) {
        requireNonNull(ref, "ref is null");
        // A container removed between the list and the inspect: look again once.
        for (int attempt = 1; ; attempt++) {
            ListedContainer current = resolve(ref).current();
            Optional<SandboxObservation> observation = backend.observe(current);
            if (observation.isPresent() || attempt == 2) {
                return observation.orElseThrow(() -> DriverException.notFound(ref));
            }
        }
    }

    @Override
    public List<SandboxObservation> list() {
        List<SandboxObservation> observations = new ArrayList<>();
        for (SandboxContainers found : backend.findAll().values()) {
            backend.observeQuietly(found.current(), false).ifPresent(observations::add);
        }
        return observations;
    }

    @Override
    public StartResult start(SandboxRef ref, LaunchInput launch) {
        requireNonNull(ref, "ref is null");
        requireNonNull(launch, "launch is null");
        validateLaunch(launch);
        return locked(ref, () -> {
            // A start needs to know whether the current execution runs, which only the engine can say: it always
            // lists. The list also shows every container carrying the id.
            long version = index.version(ref.id());
            SandboxContainers found = resolve(ref);
            index.seen(ref.id(), found.containerIds());
            ListedContainer current = found.current();
            StartDecision decision = StartDecision.decide(
                    ref,
                    launch,
                    current.generation(),
                    current.policyDigest(),
                    current.running(),
                    capabilities.launchPolicyOnStart());
            return switch (decision) {
                case REPLAY -> new StartResult(observeListed(ref, current, "start"), false);
                case RELAUNCH ->
                    launch(ref, launch, found, nextAttempt(ref, launch.generation(), found.names()), version);
                case LAUNCH -> launch(ref, launch, found, 1, version);
            };
        });
    }

    /**
     * Launches the next execution: creates its container (not started), removes the previous container by its ID,
     * then starts the new one. The new container exists before the previous one goes, so the sandbox and what it runs
     * are never without a container; and it starts only once the previous container is known to have still been
     * there: if that one was removed or replaced after the lookup, the new container (never started) is removed
     * again and the call fails with ABORTED, leaving the replacement alone.
     */
    private StartResult launch(SandboxRef ref, LaunchInput launch, SandboxContainers found, int attempt, long version) {
        ListedContainer previous = found.current();
        Optional<Known> known =
                index.get(ref.id()).filter(entry -> entry.containerId().equals(previous.id()));
        ContainerRecipe recipe = known.flatMap(Known::recipe)
                .or(() -> backend.inspect(previous.id()).map(ContainerView::recipe))
                .orElseThrow(() -> replaced(ref, previous.id(), "start"));
        boolean volumeVerified = known.map(Known::volumeVerified).orElse(false);
        Map<String, String> labels = backend.containerLabels(ref, recipe, launch);
        String name = ContainerNaming.containerName(ref, launch.generation(), attempt);
        context.mutationHook().beforeMutation(ref, MutationHook.Operation.START, previous.id());
        index.removing(ref.id(), found.containerIds());
        index.creating(ref.id(), name);
        String containerId;
        try {
            containerId = backend.createContainer(name, ref, recipe, launch, labels);
            index.created(ref.id(), name, Optional.of(containerId));
        } catch (RuntimeException e) {
            index.created(ref.id(), name, Optional.empty());
            throw e;
        }
        boolean removed;
        try {
            removed = backend.removeContainer(previous.id());
        } catch (DriverException e) {
            backend.removeContainerQuietly(containerId);
            throw e;
        }
        if (!removed) {
            // The previous container went after the lookup (the new one may even sit on a volume the engine made up
            // for it): undo the new container, touch nothing else.
            backend.removeContainerQuietly(containerId);
            backend.removeUnstampedVolumeQuietly(ref);
            index.drop(ref.id());
            throw replaced(ref, previous.id(), "start");
        }
        boolean started = backend.startContainer(containerId);
        for (String staleId : found.staleIds()) {
            context.mutationHook().beforeMutation(ref, MutationHook.Operation.START, staleId);
            backend.removeContainer(staleId);
        }
        SandboxObservation observation = started
                ? ListedContainer.observation(containerId, labels, SandboxState.RUNNING, "")
                : observe(ref, containerId, "start");
        index.put(
                ref.id(),
                new Known(containerId, labels, Optional.of(recipe), List.of(containerId), volumeVerified),
                version);
        return new StartResult(observation, true);
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
            Optional<Known> known = indexed(ref, expectedGeneration);
            if (known.isPresent()) {
                // The entry's labels are facts about its container ID; the stop goes by that ID.
                return stopContainer(ref, known.get().containerId());
            }
            long version = index.version(ref.id());
            SandboxContainers found = resolve(ref);
            index.seen(ref.id(), found.containerIds());
            ListedContainer current = found.current();
            Identity.requireExpectedGeneration(ref, expectedGeneration, current.generation());
            index.put(ref.id(), known(found, Optional.empty(), false), version);
            if (!current.running()) {
                ContainerView view =
                        backend.inspect(current.id()).orElseThrow(() -> disappeared(ref, current.id(), "stop"));
                if (!view.running()) {
                    return new StopResult(view.observation(), false);
                }
            }
            return stopContainer(ref, current.id());
        });
    }

    private StopResult stopContainer(SandboxRef ref, String containerId) {
        context.mutationHook().beforeMutation(ref, MutationHook.Operation.STOP, containerId);
        boolean stoppedNow;
        try {
            stoppedNow = backend.stopContainer(containerId);
        } catch (NotFoundException e) {
            index.drop(ref.id());
            throw replaced(ref, containerId, "stop");
        }
        ContainerView stopped = backend.awaitStopped(containerId).orElseThrow(() -> {
            index.drop(ref.id());
            return replaced(ref, containerId, "stop");
        });
        log.debug("Stopped container {} of sandbox {}", containerId, ref);
        return new StopResult(stopped.observation(), stoppedNow);
    }

    @Override
    public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
        requireNonNull(ref, "ref is null");
        requireNonNull(expectedGeneration, "expectedGeneration is null");
        return locked(ref, () -> {
            Optional<Known> known = indexed(ref, expectedGeneration);
            String currentId;
            List<String> staleIds;
            boolean volumeVerified;
            if (known.isPresent()) {
                Known entry = known.get();
                currentId = entry.containerId();
                staleIds = entry.others();
                volumeVerified = entry.volumeVerified();
            } else {
                Optional<SandboxContainers> found = backend.find(ref.id());
                if (found.isEmpty()) {
                    // A create that failed half-way may have left the workspace volume: it goes too.
                    index.forget(ref.id());
                    return new DeleteResult(backend.removeVolume(ref, false));
                }
                ListedContainer current = found.get().current();
                requireIdentity(ref, current.labels());
                Identity.requireExpectedGeneration(ref, expectedGeneration, current.generation());
                currentId = current.id();
                staleIds = found.get().staleIds();
                volumeVerified = false;
            }
            // From here on the sandbox is going: what the index knew of it is dropped before anything changes.
            index.forget(ref.id());
            context.mutationHook().beforeMutation(ref, MutationHook.Operation.DELETE, currentId);
            if (!backend.removeContainer(currentId)) {
                throw replaced(ref, currentId, "delete");
            }
            for (String staleId : staleIds) {
                context.mutationHook().beforeMutation(ref, MutationHook.Operation.DELETE, staleId);
                backend.removeContainer(staleId);
            }
            backend.removeVolume(ref, volumeVerified);
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
        // What the index learnt without a watch (a replica that did not lead) may be stale: from here on the engine's
        // events keep it true, so it starts over.
        index.clear();
        ContainerWatch watch = new ContainerWatch(backend, index, watcher, locks::isHeld, watches::remove);
        watches.add(watch);
        try {
            watch.start();
        } catch (RuntimeException e) {
            watch.close();
            throw e;
        }
        return watch;
    }

    // ---- exec and logs

    /** Runs {@code command} in the container of execution {@code generation} ({@link ContainerExecutions}). */
    @Override
    public ExecProcess exec(SandboxRef ref, long generation, ExecCommand command, ExecListener listener) {
        requireNonNull(ref, "ref is null");
        requireNonNull(command, "command is null");
        requireNonNull(listener, "listener is null");
        requireOpen();
        if (!capabilities.exec()) {
            throw new DriverException(
                    DriverErrorCode.UNSUPPORTED,
                    "exec needs a plain (non-TLS) connection to the "
                            + backend.dialect().engineName());
        }
        return executions.exec(ref, generation, command, listener);
    }

    /** Reads the output of the container of execution {@code generation} ({@link ContainerExecutions}). */
    @Override
    public LogStream logs(SandboxRef ref, long generation, LogQuery query, LogListener listener) {
        requireNonNull(ref, "ref is null");
        requireNonNull(query, "query is null");
        requireNonNull(listener, "listener is null");
        requireOpen();
        return executions.logs(ref, generation, query, listener);
    }

    private void requireOpen() {
        if (closed.get()) {
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "the driver is closed");
        }
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            for (ContainerWatch watch : List.copyOf(watches)) {
                watch.close();
            }
            executions.close();
            backend.close();
        }
    }

    /** The containers of {@code ref}, verified: NOT_FOUND if none carries the id, FAILED_PRECONDITION on mismatch. */
    private SandboxContainers resolve(SandboxRef ref) {
        SandboxContainers found = backend.find(ref.id()).orElseThrow(() -> DriverException.notFound(ref));
        requireIdentity(ref, found.current().labels());
        return found;
    }

    /**
     * The index's entry of {@code ref} if it agrees with what the call is asked to do (the entry's stamps match
     * {@code ref} and its generation is the expected one), else empty, and a disagreeing entry is dropped: the caller
     * then asks the engine and decides on its answer. The index learns of containers created or removed by other
     * driver instances only through a watch, which only the leading gateway replica runs, so a disagreement means the
     * entry may be stale, never that the request is wrong.
     */
    private Optional<Known> indexed(SandboxRef ref, OptionalLong expectedGeneration) {
        Optional<Known> known = index.get(ref.id()).filter(entry -> {
            Map<String, String> labels = entry.labels();
            return ref.workspace().equals(labels.get(dev.sandgate.spi.Labels.WORKSPACE))
                    && ref.name().equals(labels.get(dev.sandgate.spi.Labels.NAME))
                    && (expectedGeneration.isEmpty()
                            || expectedGeneration.getAsLong()
                                    == ListedContainer.generation(entry.containerId(), labels));
        });
        if (known.isEmpty()) {
            index.drop(ref.id());
        }
        return known;
    }

    private static Known known(SandboxContainers found, Optional<ContainerRecipe> recipe, boolean volumeVerified) {
        ListedContainer current = found.current();
        return new Known(current.id(), current.labels(), recipe, found.containerIds(), volumeVerified);
    }

    private static void requireIdentity(SandboxRef ref, Map<String, String> labels) {
        Identity.requireLocator(
                ref,
                labels.getOrDefault(dev.sandgate.spi.Labels.WORKSPACE, ""),
                labels.getOrDefault(dev.sandgate.spi.Labels.NAME, ""));
    }

    private SandboxObservation observe(SandboxRef ref, String containerId, String operation) {
        return backend.inspect(containerId)
                .map(ContainerView::observation)
                .orElseThrow(() -> disappeared(ref, containerId, operation));
    }

    private SandboxObservation observeListed(SandboxRef ref, ListedContainer container, String operation) {
        return backend.observe(container).orElseThrow(() -> disappeared(ref, container.id(), operation));
    }

    private static DriverException disappeared(SandboxRef ref, String containerId, String operation) {
        return new DriverException(
                DriverErrorCode.ABORTED,
                "container " + containerId + " of sandbox " + ref.id() + " disappeared during the " + operation);
    }

    private static DriverException replaced(SandboxRef ref, String containerId, String operation) {
        return DriverException.replaced(ref, containerId, operation);
    }

    /**
     * Runs a lifecycle call holding the sandbox's lock. Watches leave the sandbox's events alone while the lock is held
     * and look at the sandbox once it is released (see {@link ContainerWatch}).
     */
    private <T> T locked(SandboxRef ref, java.util.function.Supplier<T> operation) {
        try {
            return locks.call(ref.id(), lockTimeout, operation);
        } finally {
            for (ContainerWatch watch : watches) {
                watch.settled(ref.id());
            }
        }
    }
}
