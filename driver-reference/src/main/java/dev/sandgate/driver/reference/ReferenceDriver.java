package dev.sandgate.driver.reference;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.toolkit.ExecutionFacts;
import dev.sandgate.driver.toolkit.FileBoundary;
import dev.sandgate.driver.toolkit.GuardedMutations;
import dev.sandgate.driver.toolkit.Identity;
import dev.sandgate.driver.toolkit.PollingWatch;
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
import dev.sandgate.spi.Labels;
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
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The reference driver: every rule of {@link ComputeDriver}, over a {@link DirectoryBackend}. Executions are simulated
 * (a state flag; the spec's command and exec's commands are interpreted by {@link SimulatedShell}, never run);
 * identity, generations, idempotency, the mutation hook, the backend id checks and exec's and logs' pinning to one
 * execution are real.
 *
 * <p>A sandbox is the resource stored under its id in this gateway's folder. Every operation reads it without a lock,
 * verifies its stamps against the request, decides, and, if it must change something, calls the {@link MutationHook}
 * with the resource's backend id, then takes the sandbox's lock, reads it again and goes on only if the backend id is
 * still the one it verified: a resource replaced meanwhile is never touched (ABORTED, or NOT_FOUND if it is gone).
 *
 * <p>This is the driver to copy when writing one. The rules themselves come from the driver toolkit, so that a
 * driver only says where its backend keeps things: {@link StartDecision} decides a start, {@link Identity} checks a
 * resource's stamps, a name's holder, the incarnation and the expected generation, the backend's {@link
 * dev.sandgate.driver.toolkit.SlotLocks} serialize the operations on one sandbox (and refuse to call the mutation hook
 * under the lock: a hook may wait on the same sandbox), and {@link PollingWatch} delivers the watch.
 */
final class ReferenceDriver implements ComputeDriver {
    private static final FileBoundary BOUNDARY = new FileBoundary("the reference directory");
    private static final System.Logger LOG = System.getLogger(ReferenceDriver.class.getName());
    /**
     * A watch looks at every record (a stat each) once over this many polls, a slice of them on each, to see changes
     * made behind this driver's back (1 s at the default 50 ms interval; longer with more records than {@link
     * IncrementalScan#MAX_LOOKS_PER_SCAN} per slice); and on every poll at the records this driver changed.
     */
    static final int SWEEP_EVERY = 20;
    /**
     * A watch rereads every record once over about this many polls (a minute at the default interval); otherwise only
     * records whose version changed. Every write renames a new file into place, so the version (the file's identity
     * among its fields) tells nearly every change apart: rereading is a safety net, and over many records a costly one.
     */
    static final int FULL_SCAN_EVERY = 1_200;
    /**
     * The images this backend does not have and can never get: a create of one fails permanently (INVALID_ARGUMENT
     * naming {@code spec.image}) and leaves nothing behind, as an engine that cannot pull an image does.
     */
    static final String MISSING_IMAGE_PREFIX = "missing/";

    private final DirectoryBackend backend;
    private final String gatewayId;
    private final MutationHook mutationHook;
    private final DriverCapabilities capabilities;
    private final Duration watchInterval;
    private final GuardedMutations<StoredResource> guard;
    private final SimulatedExecutions executions;
    private final Set<Subscription> watches = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    ReferenceDriver(DirectoryBackend backend, ReferenceSettings settings, DriverContext context) {
        this.backend = requireNonNull(backend, "backend is null");
        this.gatewayId = context.gatewayId();
        this.mutationHook = context.mutationHook();
        this.capabilities = new DriverCapabilities(settings.enforceableFields(), settings.launchPolicyOnStart(), true)
                .withExecAndLogs(settings.exec(), settings.logs());
        this.watchInterval = settings.watchInterval();
        this.guard = new GuardedMutations<>(gatewayId, "the resource stored for sandbox", new Records());
        this.executions = new SimulatedExecutions(backend, gatewayId, this::runs, watchInterval);
    }

    /** The backend's records as the toolkit's mutation guard reads, locks and describes them. */
    private final class Records implements GuardedMutations.Records<StoredResource> {
        @Override
        public Optional<StoredResource> read(String sandboxId) {
            return backend.read(gatewayId, sandboxId);
        }

        @Override
        public <T> T locked(String sandboxId, Supplier<T> body) {
            return backend.locked(gatewayId, sandboxId, body);
        }

        @Override
        public Identity.Stamps stamps(StoredResource resource) {
            return new Identity.Stamps(
                    resource.label(Labels.SANDBOX_ID),
                    resource.label(Labels.GATEWAY_ID),
                    resource.label(Labels.WORKSPACE),
                    resource.label(Labels.NAME));
        }

        @Override
        public String backendId(StoredResource resource) {
            return resource.backendId();
        }

        @Override
        public long generation(StoredResource resource) {
            return ReferenceDriver.generation(resource);
        }

        /** Called without the sandbox's lock (the hook may wait on the sandbox). */
        @Override
        public void beforeMutation(SandboxRef ref, MutationHook.Operation operation, StoredResource resource) {
            backend.beforeMutation(gatewayId, mutationHook, ref, operation, resource.backendId());
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
        requireOpen();
        capabilities.requireEnforceable(launch.policy());
    }

    @Override
    public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
        requireNonNull(ref, "ref is null");
        validate(spec, launch);
        if (spec.image().startsWith(MISSING_IMAGE_PREFIX)) {
            throw DriverException.invalidArgument(
                    "spec.image", "the reference backend has no image '" + spec.image() + "' and cannot get one");
        }
        return boundary(() -> backend.locked(gatewayId, ref.id(), () -> {
            // Nearly every create finds nothing: asking first spares the failed open its exception.
            Optional<StoredResource> existing =
                    backend.exists(gatewayId, ref.id()) ? backend.read(gatewayId, ref.id()) : Optional.empty();
            if (existing.isPresent()) {
                StoredResource resource = guard.verified(ref, existing.get());
                long generation = generation(resource);
                String digest = resource.label(Labels.POLICY_DIGEST);
                if (generation == launch.generation()
                        && launch.policy().digest().equals(digest)) {
                    return new CreateResult(observe(resource), false);
                }
                throw DriverException.alreadyExists(ref, launch, generation, digest);
            }
            Identity.requireNameFree(ref, nameHolder(ref));
            var stamps = new TreeMap<>(spec.labels());
            stamps.putAll(managedStamps(ref, launch));
            var resource = new StoredResource(
                    gatewayId,
                    ref.id(),
                    UUID.randomUUID().toString(),
                    StoredResource.State.RUNNING,
                    stamps,
                    LaunchSettings.of(launch.policy()));
            wrote(resource, backend.insert(resource, SpecCodec.encode(spec)));
            executions.launched(ref.id(), launch.generation(), spec.command(), spec.environment());
            LOG.log(Level.DEBUG, "created {0} at generation {1}", ref, launch.generation());
            return new CreateResult(observe(resource), true);
        }));
    }

    @Override
    public SandboxObservation get(SandboxRef ref) {
        requireNonNull(ref, "ref is null");
        requireOpen();
        return boundary(() -> observe(guard.resolve(ref)));
    }

    @Override
    public List<SandboxObservation> list() {
        requireOpen();
        return boundary(this::listed);
    }

    @Override
    public StartResult start(SandboxRef ref, LaunchInput launch) {
        requireNonNull(ref, "ref is null");
        requireNonNull(launch, "launch is null");
        requireOpen();
        capabilities.requireEnforceable(launch.policy());
        return boundary(() -> guard.start(
                ref,
                resource -> decide(ref, resource, launch).launches(),
                resource -> new StartResult(observe(resource), false),
                resource -> storedSpec(ref), // a launch needs the spec kept at create
                current -> {
                    StoredResource launched = current.withState(StoredResource.State.RUNNING)
                            .withLabels(Map.of(
                                    Labels.GENERATION, Long.toString(launch.generation()),
                                    Labels.POLICY_DIGEST, launch.policy().digest()))
                            .withSettings(LaunchSettings.of(launch.policy()));
                    wrote(launched, backend.replace(current, launched));
                    SandboxSpec spec = storedSpec(ref);
                    executions.launched(ref.id(), launch.generation(), spec.command(), spec.environment());
                    LOG.log(Level.DEBUG, "started {0} at generation {1}", ref, launch.generation());
                    return new StartResult(observe(launched), true);
                }));
    }

    @Override
    public StopResult stop(SandboxRef ref, OptionalLong expectedGeneration) {
        requireNonNull(ref, "ref is null");
        requireNonNull(expectedGeneration, "expectedGeneration is null");
        requireOpen();
        return boundary(() -> guard.stop(
                ref,
                expectedGeneration,
                StoredResource::running,
                resource -> new StopResult(observe(resource), false),
                current -> {
                    StoredResource stopped = current.withState(StoredResource.State.STOPPED);
                    wrote(stopped, backend.replace(current, stopped));
                    LOG.log(Level.DEBUG, "stopped {0}", ref);
                    return new StopResult(observe(stopped), true);
                }));
    }

    @Override
    public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
        requireNonNull(ref, "ref is null");
        requireNonNull(expectedGeneration, "expectedGeneration is null");
        requireOpen();
        return boundary(() -> guard.delete(ref, expectedGeneration, () -> new DeleteResult(false), current -> {
            boolean removed = backend.remove(gatewayId, ref.id());
            changed(ref.id());
            LOG.log(Level.DEBUG, "deleted {0}", ref);
            return new DeleteResult(removed);
        }));
    }

    @Override
    public WatchSubscription watch(SandboxWatcher watcher) {
        requireNonNull(watcher, "watcher is null");
        requireOpen();
        var scan = new IncrementalScan(backend, gatewayId, this::seen, SWEEP_EVERY, FULL_SCAN_EVERY);
        var subscription = new Subscription[1];
        PollingWatch watch = new PollingWatch(
                "sandgate-reference-watch-" + gatewayId,
                watchInterval,
                scan.poller(),
                watcher,
                ReferenceDriver::watchFailure,
                () -> watches.remove(subscription[0]));
        subscription[0] = new Subscription(watch, scan);
        watches.add(subscription[0]);
        return watch.start();
    }

    /**
     * Runs a simulated command ({@link SimulatedShell}) in execution {@code generation}: resolved by id, its identity
     * verified, the generation it carries and its running checked, then pinned to its backend id and generation; no
     * host process runs.
     */
    @Override
    public ExecProcess exec(SandboxRef ref, long generation, ExecCommand command, ExecListener listener) {
        requireNonNull(ref, "ref is null");
        requireNonNull(command, "command is null");
        requireNonNull(listener, "listener is null");
        requireOpen();
        if (!capabilities.exec()) {
            return ComputeDriver.super.exec(ref, generation, command, listener);
        }
        return boundary(() -> {
            StoredResource resource = pinned(ref, generation, ExecutionFacts.Access.EXEC);
            Map<String, String> environment = storedSpec(ref).environment();
            return executions.exec(
                    new SimulatedExecutions.Pin(ref, resource.backendId(), generation), command, environment, listener);
        });
    }

    /** Reads what the launches of execution {@code generation} printed (simulated: see {@link SimulatedExecutions}). */
    @Override
    public LogStream logs(SandboxRef ref, long generation, LogQuery query, LogListener listener) {
        requireNonNull(ref, "ref is null");
        requireNonNull(query, "query is null");
        requireNonNull(listener, "listener is null");
        requireOpen();
        if (!capabilities.logs()) {
            return ComputeDriver.super.logs(ref, generation, query, listener);
        }
        return boundary(() -> {
            StoredResource resource = pinned(ref, generation, ExecutionFacts.Access.LOGS);
            return executions.logs(new SimulatedExecutions.Pin(ref, resource.backendId(), generation), query, listener);
        });
    }

    /**
     * The resource of {@code ref}, its stamps verified, which must carry exactly {@code generation} (and, for an exec,
     * run): the toolkit's {@link ExecutionFacts} checks them.
     */
    private StoredResource pinned(SandboxRef ref, long generation, ExecutionFacts.Access access) {
        StoredResource resource = guard.resolve(ref);
        new ExecutionFacts(
                        resource.label(Labels.WORKSPACE),
                        resource.label(Labels.NAME),
                        generation(resource),
                        resource.running())
                .require(ref, generation, access);
        return resource;
    }

    /** Whether the pinned execution runs: the same incarnation, at its generation, running. */
    private boolean runs(SimulatedExecutions.Pin pin) {
        return backend.read(gatewayId, pin.ref().id())
                .filter(resource -> resource.backendId().equals(pin.backendId())
                        && resource.running()
                        && pin.generation() == generation(resource))
                .isPresent();
    }

    /** A watch and its scan, which learns from this driver what it wrote. */
    private record Subscription(PollingWatch watch, IncrementalScan scan) {}

    @Override
    public void close() {
        closed = true;
        executions.closeAll();
        for (Subscription subscription : List.copyOf(watches)) {
            subscription.watch().close();
        }
    }

    /** Tells every watch that this driver wrote {@code resource}, which had {@code version} once written. */
    private void wrote(StoredResource resource, DirectoryBackend.Version version) {
        for (Subscription subscription : watches) {
            subscription.scan().wrote(resource.key(), version, resource);
        }
    }

    /** Tells every watch that this driver changed the record under {@code key}. */
    private void changed(String key) {
        for (Subscription subscription : watches) {
            subscription.scan().changed(key);
        }
    }

    /**
     * Every resource of this gateway that is a sandbox: stored under its own id and stamped by this gateway. The SPI
     * asks for every observation at once, so each is made small instead: read one record at a time, its id the key's
     * instance, and what many sandboxes share (workspace, policy digest, labels) kept once.
     */
    private List<SandboxObservation> listed() {
        var interner = new Interner();
        var observations = new ArrayList<SandboxObservation>();
        for (String key : backend.keys(gatewayId)) {
            backend.read(gatewayId, key).flatMap(this::seen).ifPresent(seen -> {
                SandboxObservation o = seen.observation();
                observations.add(new SandboxObservation(
                        new SandboxRef(
                                key,
                                interner.intern(o.ref().workspace()),
                                o.ref().name()),
                        o.generation(),
                        o.state(),
                        interner.intern(o.policyDigest()),
                        interner.intern(o.labels()),
                        ""));
            });
        }
        return Collections.unmodifiableList(observations);
    }

    /** What a watch sees of {@code resource}: empty unless it is one of this gateway's sandboxes. */
    private Optional<IncrementalScan.Seen> seen(StoredResource resource) {
        if (!resource.key().equals(resource.label(Labels.SANDBOX_ID))
                || !gatewayId.equals(resource.label(Labels.GATEWAY_ID))) {
            return Optional.empty(); // not a sandbox of this gateway's layout
        }
        if (SandboxRef.fromStamps(resource.labels()).isEmpty()
                || Labels.parseGeneration(resource.label(Labels.GENERATION)).isEmpty()) {
            LOG.log(Level.WARNING, "skipping resource {0}: malformed identity or generation stamps", resource.key());
            return Optional.empty();
        }
        return Optional.of(new IncrementalScan.Seen(resource.backendId(), observe(resource)));
    }

    /**
     * The id of another sandbox of this gateway stamped with {@code ref}'s workspace and name, if any: the backend's
     * name index lists the records to read.
     */
    private Optional<String> nameHolder(SandboxRef ref) {
        return backend.named(gatewayId, ref.workspace(), ref.name()).stream()
                .filter(resource -> !ref.id().equals(resource.label(Labels.SANDBOX_ID)))
                .map(resource -> String.valueOf(resource.label(Labels.SANDBOX_ID)))
                .findFirst();
    }

    /** The Start(G) rules over what {@code resource} carries. */
    private StartDecision decide(SandboxRef ref, StoredResource resource, LaunchInput launch) {
        return StartDecision.decide(
                ref,
                launch,
                generation(resource),
                resource.label(Labels.POLICY_DIGEST),
                resource.running(),
                capabilities.launchPolicyOnStart());
    }

    private SandboxSpec storedSpec(SandboxRef ref) {
        try {
            return SpecCodec.decode(backend.readSpec(gatewayId, ref.id()));
        } catch (IllegalArgumentException e) {
            throw new DriverException(
                    DriverErrorCode.FAILED_PRECONDITION,
                    "sandbox " + ref.id() + " cannot be launched: " + e.getMessage());
        }
    }

    private Map<String, String> managedStamps(SandboxRef ref, LaunchInput launch) {
        return Map.of(
                Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE,
                Labels.GATEWAY_ID, gatewayId,
                Labels.SANDBOX_ID, ref.id(),
                Labels.WORKSPACE, ref.workspace(),
                Labels.NAME, ref.name(),
                Labels.GENERATION, Long.toString(launch.generation()),
                Labels.POLICY_DIGEST, launch.policy().digest());
    }

    private SandboxObservation observe(StoredResource resource) {
        var userLabels = new TreeMap<String, String>();
        resource.labels().forEach((key, value) -> {
            if (!Labels.isReserved(key)) {
                userLabels.put(key, value);
            }
        });
        SandboxRef ref = new SandboxRef(
                resource.label(Labels.SANDBOX_ID), resource.label(Labels.WORKSPACE), resource.label(Labels.NAME));
        SandboxState state = switch (resource.state()) {
            case RUNNING -> SandboxState.RUNNING;
            case STOPPED -> SandboxState.STOPPED;
        };
        String digest = resource.label(Labels.POLICY_DIGEST);
        return new SandboxObservation(ref, generation(resource), state, digest == null ? "" : digest, userLabels, "");
    }

    private static long generation(StoredResource resource) {
        String stamp = resource.label(Labels.GENERATION);
        return Labels.parseGeneration(stamp)
                .orElseThrow(() -> new DriverException(
                        DriverErrorCode.INTERNAL,
                        "resource " + resource.key() + " carries generation stamp '" + stamp + "'"));
    }

    private void requireOpen() {
        if (closed) {
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "the reference driver is closed");
        }
    }

    /** What a watch's failed scan tells the watcher: a file system failure is UNAVAILABLE, anything else INTERNAL. */
    private static DriverException watchFailure(RuntimeException e) {
        return e instanceof UncheckedIOException || e instanceof IllegalStateException
                ? new DriverException(DriverErrorCode.UNAVAILABLE, "cannot read the reference directory", e)
                : new DriverException(DriverErrorCode.INTERNAL, "the reference watch failed: " + e.getMessage(), e);
    }

    /** Maps file system failures and unreadable records once, at the SPI boundary ({@link FileBoundary}). */
    private static <T> T boundary(Supplier<T> call) {
        return BOUNDARY.call(call);
    }
}
