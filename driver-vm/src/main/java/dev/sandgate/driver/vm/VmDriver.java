package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.toolkit.FileBoundary;
import dev.sandgate.driver.toolkit.GuardedMutations;
import dev.sandgate.driver.toolkit.Identity;
import dev.sandgate.driver.toolkit.PollingWatch;
import dev.sandgate.driver.toolkit.SnapshotDiff;
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
import dev.sandgate.spi.PolicyField;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.StartResult;
import dev.sandgate.spi.StaticPolicy;
import dev.sandgate.spi.StopResult;
import dev.sandgate.spi.WatchSubscription;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The VM driver: each sandbox is a QEMU virtual machine whose state lives in its own directory ({@link StateStore}).
 *
 * <p>A sandbox is the directory stored under its id in this gateway's directory, whose record carries that id and
 * this gateway's id. Every operation reads the record without a lock, verifies its identity against the request and
 * decides; to change anything it calls the {@link MutationHook} with the record's backend id, takes the sandbox's
 * lock, reads the record again and goes on only if it is the same incarnation (else ABORTED: nothing is touched).
 * Processes are acted on only through the record's {@link ProcessIdentity} (pid and start time), so a VM replaced
 * behind the driver's back is never stopped or killed.
 *
 * <p>The rules come from the driver toolkit, as in the reference driver: {@link StartDecision}, {@link Identity}, the
 * state store's slot locks (the mutation hook is called without them) and a {@link PollingWatch} over {@link
 * SnapshotDiff}, which adds the guest's report lines as platform events.
 */
final class VmDriver implements ComputeDriver {
    private static final FileBoundary BOUNDARY = new FileBoundary("the VM state directory");
    private static final Logger LOG = LoggerFactory.getLogger(VmDriver.class);

    /** What a VM enforces from outside the guest. The other fields would be guest settings its root could undo. */
    static final Set<PolicyField> ENFORCEABLE =
            Set.copyOf(EnumSet.of(PolicyField.NETWORK_NONE, PolicyField.MEMORY_LIMIT, PolicyField.CPU_LIMIT));

    private final VmSettings settings;
    private final StateStore store;
    private final Qemu qemu;
    private final String gatewayId;
    private final MutationHook mutationHook;
    private final DriverCapabilities capabilities =
            new DriverCapabilities(ENFORCEABLE, true, true).withExecAndLogs(true, true);
    private final Set<PollingWatch> watches = ConcurrentHashMap.newKeySet();
    private final GuardedMutations<VmRecord> guard;
    private final GuestAgent.Registry agents;
    private volatile boolean closed;

    VmDriver(VmSettings settings, StateStore store, DriverContext context) {
        this.settings = requireNonNull(settings, "settings is null");
        this.store = requireNonNull(store, "store is null");
        this.qemu = new Qemu(settings);
        this.gatewayId = context.gatewayId();
        this.mutationHook = context.mutationHook();
        this.guard = new GuardedMutations<>(gatewayId, "the state directory of sandbox", new Records());
        this.agents = new GuestAgent.Registry(settings.launchTimeout());
    }

    /** The state directories as the toolkit's mutation guard reads, locks and describes them. */
    private final class Records implements GuardedMutations.Records<VmRecord> {
        @Override
        public Optional<VmRecord> read(String sandboxId) {
            return store.read(gatewayId, sandboxId);
        }

        @Override
        public <T> T locked(String sandboxId, Supplier<T> body) {
            return store.locked(gatewayId, sandboxId, body);
        }

        @Override
        public Identity.Stamps stamps(VmRecord record) {
            return new Identity.Stamps(record.sandboxId(), record.gatewayId(), record.workspace(), record.name());
        }

        @Override
        public String backendId(VmRecord record) {
            return record.backendId();
        }

        @Override
        public long generation(VmRecord record) {
            return record.generation();
        }

        /** Called without the sandbox's lock (the hook may wait on the sandbox). */
        @Override
        public void beforeMutation(SandboxRef ref, MutationHook.Operation operation, VmRecord record) {
            store.beforeMutation(gatewayId, mutationHook, ref, operation, record.backendId());
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
        settings.image(spec.image());
        ConfigDisk.validate(spec);
        validateLaunch(launch);
    }

    private void validateLaunch(LaunchInput launch) {
        capabilities.requireEnforceable(launch.policy());
        StaticPolicy policy = launch.policy().staticPolicy();
        if (policy.memoryLimitBytes() > 0 && policy.memoryLimitBytes() < VmSettings.MIN_MEMORY_BYTES) {
            throw DriverException.invalidArgument(
                    "policy.static.memory_limit_bytes",
                    "a VM needs at least " + (VmSettings.MIN_MEMORY_BYTES >> 20) + " MiB to boot");
        }
        if (policy.cpuLimitMillis() % 1000 != 0) {
            // Rounding up would give the guest more than asked while the driver claims CPU_LIMIT; rounding down
            // would give a 500-millicore policy no vCPU at all.
            throw DriverException.invalidArgument(
                    "policy.static.cpu_limit_millis",
                    "the vm driver gives whole vCPUs: " + policy.cpuLimitMillis()
                            + " millicores is not a whole number of cores (use a multiple of 1000)");
        }
    }

    @Override
    public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
        requireNonNull(ref, "ref is null");
        validate(spec, launch);
        return boundary(() -> store.locked(gatewayId, ref.id(), () -> {
            Optional<VmRecord> existing = store.read(gatewayId, ref.id());
            if (existing.isPresent()) {
                VmRecord record = guard.verified(ref, existing.get());
                if (record.generation() == launch.generation()
                        && record.policyDigest().equals(launch.policy().digest())) {
                    return new CreateResult(observe(record), false);
                }
                throw DriverException.alreadyExists(ref, launch, record.generation(), record.policyDigest());
            }
            Identity.requireNameFree(ref, nameHolder(ref));
            var record = new VmRecord(
                    UUID.randomUUID().toString(),
                    VmRecord.stamps(
                            spec.labels(),
                            gatewayId,
                            ref,
                            launch.generation(),
                            launch.policy().digest()),
                    spec,
                    launch.policy().revision(),
                    VmRecord.Phase.LAUNCHING,
                    Optional.empty());
            Path prepared = store.prepare(gatewayId);
            try {
                qemu.createWorkspaceDisk(prepared.resolve(StateStore.WORKSPACE_DISK));
                store.write(prepared, record);
            } catch (IOException e) {
                StateStore.deleteTree(prepared);
                throw new UncheckedIOException(e);
            } catch (RuntimeException e) {
                StateStore.deleteTree(prepared);
                throw e;
            }
            if (!store.commit(prepared, gatewayId, ref.id())) {
                StateStore.deleteTree(prepared);
                throw new DriverException(
                        DriverErrorCode.ABORTED, "a state directory for sandbox " + ref.id() + " appeared meanwhile");
            }
            VmRecord launched;
            try {
                launched = launch(ref, record, launch);
            } catch (RuntimeException e) {
                store.remove(gatewayId, ref.id()); // a create that cannot launch leaves nothing behind
                throw e;
            }
            LOG.info(
                    "created {} at generation {} ({})",
                    ref,
                    launch.generation(),
                    launched.process().orElseThrow());
            return new CreateResult(observe(launched), true);
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
        return boundary(() -> scan().stream().map(Sample::observation).toList());
    }

    @Override
    public StartResult start(SandboxRef ref, LaunchInput launch) {
        requireNonNull(ref, "ref is null");
        requireNonNull(launch, "launch is null");
        requireOpen();
        validateLaunch(launch);
        return boundary(() -> guard.start(
                ref,
                record -> decide(ref, record, launch).launches(),
                record -> new StartResult(observe(record), false),
                record -> requireImage(ref, record),
                current -> {
                    VmRecord launching = current.withLaunch(
                            launch.generation(),
                            launch.policy().digest(),
                            launch.policy().revision());
                    store.write(directory(ref), launching);
                    VmRecord launched = launch(ref, launching, launch);
                    LOG.info(
                            "started {} at generation {} ({})",
                            ref,
                            launch.generation(),
                            launched.process().orElseThrow());
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
                record -> record.liveProcess().isPresent(),
                record -> new StopResult(observe(record), false),
                current -> {
                    Optional<ProcessIdentity> process = current.liveProcess();
                    if (process.isEmpty()) { // it ended since the check
                        return new StopResult(observe(current), false);
                    }
                    Path directory = directory(ref);
                    boolean guestListens = GuestReport.read(directory.resolve(StateStore.CONTROL_LOG))
                            .readyAt(current.generation());
                    qemu.stop(process.get(), guestListens);
                    VmRecord stopped = current.stopped();
                    store.write(directory, stopped);
                    LOG.info("stopped {} at generation {}", ref, current.generation());
                    return new StopResult(observe(stopped), true);
                }));
    }

    @Override
    public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
        requireNonNull(ref, "ref is null");
        requireNonNull(expectedGeneration, "expectedGeneration is null");
        requireOpen();
        return boundary(() -> guard.delete(ref, expectedGeneration, () -> new DeleteResult(false), current -> {
            current.liveProcess().ifPresent(process -> qemu.stop(process, false));
            boolean removed = store.remove(gatewayId, ref.id());
            if (removed) {
                LOG.info("deleted {}", ref);
            }
            return new DeleteResult(removed);
        }));
    }

    /**
     * Runs {@code command} through the guest agent of the QEMU process of running execution {@code generation}
     * ({@link VmExec}): that process is verified alive before and after the connection, and the agent refuses a
     * command for another generation than its boot's.
     */
    @Override
    public ExecProcess exec(SandboxRef ref, long generation, ExecCommand command, ExecListener listener) {
        requireNonNull(ref, "ref is null");
        requireNonNull(command, "command is null");
        requireNonNull(listener, "listener is null");
        requireOpen();
        String script = VmExec.script(command);
        return boundary(() -> {
            VmRecord record = guard.resolve(ref);
            GuestReport report = GuestReport.read(directory(ref).resolve(StateStore.CONTROL_LOG));
            ProcessIdentity process = PinnedExecution.running(ref, generation, record, report);
            return VmExec.start(agents, ref, generation, process, command, script, listener, settings.launchTimeout());
        });
    }

    /** Reads the workload's output of execution {@code generation} ({@link VmLogs}), running or stopped. */
    @Override
    public LogStream logs(SandboxRef ref, long generation, LogQuery query, LogListener listener) {
        requireNonNull(ref, "ref is null");
        requireNonNull(query, "query is null");
        requireNonNull(listener, "listener is null");
        requireOpen();
        return boundary(() -> VmLogs.open(
                ref,
                generation,
                guard.resolve(ref),
                directory(ref),
                () -> store.read(gatewayId, ref.id()),
                query,
                listener,
                settings.watchInterval()));
    }

    @Override
    public WatchSubscription watch(SandboxWatcher watcher) {
        requireNonNull(watcher, "watcher is null");
        requireOpen();
        var diff = new SnapshotDiff<Sample>(Sample::observation, VmDriver::reportedSince);
        var holder = new PollingWatch[1];
        PollingWatch watch = new PollingWatch(
                "sandgate-vm-watch-" + gatewayId,
                settings.watchInterval(),
                diff.poller(() -> boundary(this::scan)),
                watcher,
                e -> {
                    LOG.error("the VM watch failed", e);
                    return new DriverException(DriverErrorCode.INTERNAL, "the VM watch failed: " + e.getMessage(), e);
                },
                () -> watches.remove(holder[0]));
        holder[0] = watch;
        watches.add(watch);
        return watch.start();
    }

    /**
     * The lines the guest of {@code now} reported since {@code before} was taken, as platform events: all of them for
     * a new sandbox or another execution (another incarnation, process or generation), so that a report is only ever
     * attributed to the execution that wrote it.
     */
    private static List<SandboxEvent> reportedSince(Sample before, Sample now) {
        List<String> lines = now.report().lines();
        boolean sameExecution = before != null
                && before.backendId().equals(now.backendId())
                && before.process().equals(now.process())
                && before.observation().generation() == now.observation().generation();
        int from = sameExecution ? Math.min(before.report().lines().size(), lines.size()) : 0;
        SandboxObservation observation = now.observation();
        var events = new ArrayList<SandboxEvent>();
        for (String line : lines.subList(from, lines.size())) {
            int space = line.indexOf(' ');
            String type = "vm." + (space < 0 ? line : line.substring(0, space));
            String message = space < 0 ? line : line.substring(space + 1);
            events.add(new SandboxEvent.Platform(observation.ref(), observation.generation(), type, message));
        }
        return events;
    }

    @Override
    public void close() {
        closed = true;
        List.copyOf(watches).forEach(PollingWatch::close);
        agents.closeAll();
    }

    // ---- launching

    /** Writes the launch input, starts QEMU and records its process; records a failed launch before rethrowing. */
    private VmRecord launch(SandboxRef ref, VmRecord launching, LaunchInput launch) {
        Path directory = directory(ref);
        VmImage image = requireImage(ref, launching);
        try {
            ConfigDisk.write(directory.resolve(StateStore.CONFIG_DISK), ref, launching.spec(), launch);
            ProcessIdentity process = qemu.launch(directory, qemu.arguments(image, ref, launch));
            VmRecord launched = launching.withProcess(process);
            store.write(directory, launched);
            return launched;
        } catch (IOException e) {
            store.write(directory, launching.launchFailed());
            throw new UncheckedIOException(e);
        } catch (RuntimeException e) {
            store.write(directory, launching.launchFailed());
            throw e;
        }
    }

    /**
     * The image to boot, with its files present: an image no longer configured, or whose kernel, initramfs or root disk
     * is gone, is a permanent INVALID_ARGUMENT naming {@code spec.image} (the launch can never succeed as it is).
     */
    private VmImage requireImage(SandboxRef ref, VmRecord record) {
        String name = record.spec().image();
        VmImage image;
        try {
            image = settings.image(name);
        } catch (DriverException e) {
            throw DriverException.invalidArgument(
                    "spec.image", "sandbox " + ref.id() + " cannot be launched: " + e.getMessage());
        }
        List<String> problems = image.problems(name);
        if (!problems.isEmpty()) {
            throw DriverException.invalidArgument(
                    "spec.image", "sandbox " + ref.id() + " cannot be launched: " + String.join("; ", problems));
        }
        return image;
    }

    /** The Start(G) rules over what {@code record} carries. */
    private static StartDecision decide(SandboxRef ref, VmRecord record, LaunchInput launch) {
        return StartDecision.decide(
                ref,
                launch,
                record.generation(),
                record.policyDigest(),
                record.liveProcess().isPresent(),
                true);
    }

    // ---- identity

    /**
     * The id of another sandbox of this gateway whose record carries {@code ref}'s workspace and name, if any. State
     * directories are keyed by id, so a name is found by reading every record.
     */
    private Optional<String> nameHolder(SandboxRef ref) {
        return store.list(gatewayId, (directory, problem) -> {}).stream()
                .map(StateStore.Entry::record)
                .filter(record -> ref.workspace().equals(record.workspace())
                        && ref.name().equals(record.name())
                        && !ref.id().equals(record.sandboxId()))
                .map(VmRecord::sandboxId)
                .findFirst();
    }

    private Path directory(SandboxRef ref) {
        return store.sandboxDirectory(gatewayId, ref.id());
    }

    // ---- observing

    /** One sandbox as a scan saw it: its incarnation, what the guest reported, and what the driver observes. */
    record Sample(
            String backendId, Optional<ProcessIdentity> process, GuestReport report, SandboxObservation observation) {}

    /** Every sandbox of this gateway: stored under its own id and stamped by this gateway. */
    private List<Sample> scan() {
        var samples = new ArrayList<Sample>();
        for (StateStore.Entry entry : store.list(
                gatewayId, (directory, problem) -> LOG.warn("skipping {}: {}", directory, problem.getMessage()))) {
            VmRecord record = entry.record();
            if (!entry.directoryName().equals(record.sandboxId()) || !gatewayId.equals(record.gatewayId())) {
                continue; // not a sandbox of this gateway's layout
            }
            try {
                samples.add(sample(record));
            } catch (IllegalArgumentException | DriverException e) {
                LOG.warn("skipping sandbox {}: {}", entry.directoryName(), e.getMessage());
            }
        }
        return samples;
    }

    private SandboxObservation observe(VmRecord record) {
        return sample(record).observation();
    }

    /**
     * Observes {@code record}: its process and what the guest of that process reported. If the record changes while
     * the guest's report is read (a stop and a new launch in between), the new record is observed instead, so that
     * a report is never attributed to another generation or process than the one that wrote it.
     */
    private Sample sample(VmRecord record) {
        Path directory = store.sandboxDirectory(record.gatewayId(), record.sandboxId());
        VmRecord current = record;
        for (int attempt = 0; ; attempt++) {
            Optional<ProcessIdentity> live = current.liveProcess();
            GuestReport report = current.process().isPresent()
                    ? GuestReport.read(directory.resolve(StateStore.CONTROL_LOG))
                    : GuestReport.EMPTY;
            Optional<VmRecord> after = store.read(record.gatewayId(), record.sandboxId());
            if (after.isEmpty() || after.get().equals(current) || attempt == 3) {
                return new Sample(current.backendId(), live, report, observation(current, live, report));
            }
            current = after.get();
        }
    }

    private static SandboxObservation observation(VmRecord record, Optional<ProcessIdentity> live, GuestReport report) {
        State state = switch (record.phase()) {
            case LAUNCHING -> new State(SandboxState.PROVISIONING, "starting QEMU");
            case LAUNCH_FAILED ->
                new State(SandboxState.FAILED, "QEMU could not be started (see qemu.log in the state directory)");
            case STOPPED -> new State(live.isPresent() ? SandboxState.STOPPING : SandboxState.STOPPED, "");
            case RUNNING -> launched(record, live, report);
        };
        return new SandboxObservation(
                record.ref(),
                record.generation(),
                state.state(),
                record.policyDigest(),
                record.userLabels(),
                state.detail());
    }

    private record State(SandboxState state, String detail) {}

    /** The state of a VM that the driver launched and has not stopped: from its process and its guest's report. */
    private static State launched(VmRecord record, Optional<ProcessIdentity> live, GuestReport report) {
        OptionalInt exit = report.exitStatus();
        Optional<String> failure = report.failure();
        if (failure.isPresent()) {
            return new State(SandboxState.FAILED, "the guest failed: " + failure.get());
        }
        if (live.isPresent()) {
            if (exit.isPresent()) {
                return new State(SandboxState.STOPPING, "the workload exited with status " + exit.getAsInt());
            }
            if (report.stopping()) {
                return new State(SandboxState.STOPPING, "");
            }
            if (report.readyAt(record.generation())) {
                return new State(SandboxState.RUNNING, "");
            }
            return new State(SandboxState.PROVISIONING, "booting");
        }
        if (exit.isPresent()) {
            return new State(
                    exit.getAsInt() == 0 ? SandboxState.STOPPED : SandboxState.FAILED,
                    "the workload exited with status " + exit.getAsInt());
        }
        return new State(SandboxState.FAILED, "the VM exited without being stopped");
    }

    // ---- errors

    private void requireOpen() {
        if (closed) {
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "the VM driver is closed");
        }
    }

    /** Maps file system failures and unreadable records once, at the SPI boundary ({@link FileBoundary}). */
    private static <T> T boundary(Supplier<T> call) {
        return BOUNDARY.call(call);
    }
}
