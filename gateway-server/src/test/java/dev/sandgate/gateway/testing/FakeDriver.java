package dev.sandgate.gateway.testing;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.LogStream;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.PolicyField;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.StartResult;
import dev.sandgate.spi.StopResult;
import dev.sandgate.spi.StreamKind;
import dev.sandgate.spi.TerminalSize;
import dev.sandgate.spi.WatchSubscription;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * A hand-written driver for the gateway's own tests, keeping each sandbox as a properties file in a directory, so
 * that a gateway process can be killed and a new one (with a new driver instance) finds the same state. It follows
 * the SPI's identity and generation rules, counts calls, and lets a test make the next call of a method fail or
 * block. It is not a conformance reference: that is the driver-reference module.
 */
public final class FakeDriver implements ComputeDriver {
    /** The driver methods a test can count, fail or block. */
    public enum Method {
        VALIDATE,
        CREATE,
        GET,
        LIST,
        START,
        STOP,
        DELETE,
        EXEC
    }

    private final Path directory;
    private final String gatewayId;
    private final DriverCapabilities capabilities;
    private final Map<Method, AtomicInteger> calls = new EnumMap<>(Method.class);
    private final Map<Method, DriverException> failures = new ConcurrentHashMap<>();
    private final Map<Method, DriverException> persistentFailures = new ConcurrentHashMap<>();
    private final Map<Method, Consumer<SandboxRef>> beforeHooks = new ConcurrentHashMap<>();
    private final List<SandboxWatcher> watchers = new CopyOnWriteArrayList<>();
    private final List<LaunchInput> launches = new CopyOnWriteArrayList<>();
    private volatile SandboxState launchState = SandboxState.RUNNING;
    private final AtomicInteger closedExecs = new AtomicInteger();
    private final AtomicInteger execsRun = new AtomicInteger();
    private final AtomicInteger outputsTaken = new AtomicInteger();
    private volatile Thread lastExec;

    /** The smallest memory limit the fake launches, as a real backend has one (Docker's is 6 MiB). */
    public static final long MIN_MEMORY_BYTES = 6L * 1024 * 1024;

    public FakeDriver(Path directory, String gatewayId, DriverCapabilities capabilities) {
        this.directory = requireNonNull(directory, "directory is null");
        this.gatewayId = requireNonNull(gatewayId, "gatewayId is null");
        this.capabilities = requireNonNull(capabilities, "capabilities is null");
        for (Method m : Method.values()) {
            calls.put(m, new AtomicInteger());
        }
        try {
            Files.createDirectories(directory);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static DriverCapabilities allCapabilities() {
        return new DriverCapabilities(EnumSet.allOf(PolicyField.class), true, true);
    }

    /** How many times {@code method} was called. */
    public int calls(Method method) {
        return calls.get(method).get();
    }

    /** Every launch input handed to create and start, in order. */
    public List<LaunchInput> launches() {
        return List.copyOf(launches);
    }

    /** The next call of {@code method} throws {@code failure} (before touching anything). */
    public void failNext(Method method, DriverException failure) {
        failures.put(method, failure);
    }

    /**
     * Every call of {@code method} throws {@code failure} (before touching anything) for as long as this instance
     * lives: the gateway's own retries fail too, as if the backend stayed down until a restart, which makes a new
     * instance.
     */
    public void failEach(Method method, DriverException failure) {
        persistentFailures.put(method, failure);
    }

    /** Runs {@code hook} at the start of every call of {@code method} (to block on a latch, say). */
    public void beforeEach(Method method, Consumer<SandboxRef> hook) {
        beforeHooks.put(method, hook);
    }

    /**
     * Every call of {@code method} counts {@code entered} down, then waits (up to 30 s) until {@code release} opens: a
     * driver call that hangs until the test lets it go.
     */
    public void holdEach(Method method, CountDownLatch entered, CountDownLatch release) {
        beforeEach(method, ref -> {
            entered.countDown();
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }

    /** The state a launched execution reports first (RUNNING by default; PROVISIONING to test readiness waits). */
    public void launchState(SandboxState state) {
        this.launchState = state;
    }

    public void clearHooks() {
        beforeHooks.clear();
        failures.clear();
        persistentFailures.clear();
    }

    /** Delivers an event to every watcher, as if the backend reported it. */
    public void emit(SandboxEvent event) {
        for (SandboxWatcher watcher : watchers) {
            watcher.onEvent(event);
        }
    }

    /** Removes a sandbox's resource behind the gateway's back. */
    public synchronized void removeBehindTheBack(String sandboxId) {
        try {
            Files.deleteIfExists(file(sandboxId));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Plants a resource stamped with this gateway's id that the gateway never created. */
    public synchronized void plant(SandboxRef ref, long generation, String digest) {
        write(new Resource(ref, generation, SandboxState.RUNNING, digest));
    }

    /** Marks a sandbox's execution as exited, as if its process ended. */
    public synchronized void exit(String sandboxId) {
        Resource r = read(sandboxId).orElseThrow();
        write(new Resource(r.ref, r.generation, SandboxState.STOPPED, r.digest));
    }

    @Override
    public DriverCapabilities capabilities() {
        return capabilities;
    }

    @Override
    public void validate(SandboxSpec spec, LaunchInput launch) {
        enter(Method.VALIDATE, null);
        checkLaunchable(spec, launch);
    }

    private void checkLaunchable(SandboxSpec spec, LaunchInput launch) {
        capabilities.requireEnforceable(launch.policy());
        if (spec.image().startsWith("invalid/")) {
            throw DriverException.invalidArgument("spec.image", "the fake cannot parse this image reference");
        }
        long memory = launch.policy().staticPolicy().memoryLimitBytes();
        if (memory > 0 && memory < MIN_MEMORY_BYTES) {
            throw DriverException.invalidArgument(
                    "policy.static.memory_limit_bytes", "the fake needs at least " + MIN_MEMORY_BYTES + " bytes");
        }
    }

    @Override
    public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
        enter(Method.CREATE, ref);
        return doCreate(ref, spec, launch);
    }

    private synchronized CreateResult doCreate(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
        checkLaunchable(spec, launch);
        Optional<Resource> existing = read(ref.id());
        if (existing.isPresent()) {
            Resource r = existing.get();
            if (r.generation == launch.generation()
                    && r.digest.equals(launch.policy().digest())) {
                return new CreateResult(r.observation(), false);
            }
            throw new DriverException(DriverErrorCode.ALREADY_EXISTS, "sandbox " + ref.id() + " exists");
        }
        for (Resource other : all()) {
            if (other.ref.workspace().equals(ref.workspace())
                    && other.ref.name().equals(ref.name())) {
                throw new DriverException(
                        DriverErrorCode.FAILED_PRECONDITION,
                        "a resource named " + ref.workspace() + "/" + ref.name() + " carries another id",
                        List.of(new Mismatch(Mismatch.SANDBOX_ID, ref.id(), other.ref.id())),
                        null);
            }
        }
        launches.add(launch);
        Resource created = new Resource(
                ref, launch.generation(), launchState, launch.policy().digest());
        write(created);
        notifyWatchers(new SandboxEvent.Snapshot(created.observation()));
        return new CreateResult(created.observation(), true);
    }

    @Override
    public SandboxObservation get(SandboxRef ref) {
        enter(Method.GET, ref);
        return doGet(ref);
    }

    private synchronized SandboxObservation doGet(SandboxRef ref) {
        return verified(ref).observation();
    }

    @Override
    public List<SandboxObservation> list() {
        enter(Method.LIST, null);
        return doList();
    }

    private synchronized List<SandboxObservation> doList() {
        return all().stream().map(Resource::observation).toList();
    }

    @Override
    public StartResult start(SandboxRef ref, LaunchInput launch) {
        enter(Method.START, ref);
        return doStart(ref, launch);
    }

    private synchronized StartResult doStart(SandboxRef ref, LaunchInput launch) {
        capabilities.requireEnforceable(launch.policy());
        Resource r = verified(ref);
        boolean running = r.state == SandboxState.RUNNING || r.state == SandboxState.PROVISIONING;
        if (r.generation == launch.generation() && running) {
            if (!r.digest.equals(launch.policy().digest())) {
                throw DriverException.generationMismatch(ref, launch.generation(), r.generation);
            }
            return new StartResult(r.observation(), false);
        }
        if (running || r.generation > launch.generation()) {
            throw DriverException.generationMismatch(ref, launch.generation(), r.generation);
        }
        if (!r.digest.equals(launch.policy().digest()) && !capabilities.launchPolicyOnStart()) {
            throw new DriverException(DriverErrorCode.UNSUPPORTED, "the fake cannot launch a changed policy");
        }
        launches.add(launch);
        Resource started = new Resource(
                r.ref, launch.generation(), launchState, launch.policy().digest());
        write(started);
        notifyWatchers(new SandboxEvent.Snapshot(started.observation()));
        return new StartResult(started.observation(), true);
    }

    @Override
    public StopResult stop(SandboxRef ref, OptionalLong expectedGeneration) {
        enter(Method.STOP, ref);
        return doStop(ref, expectedGeneration);
    }

    private synchronized StopResult doStop(SandboxRef ref, OptionalLong expectedGeneration) {
        Resource r = verified(ref);
        if (expectedGeneration.isPresent() && expectedGeneration.getAsLong() != r.generation) {
            throw DriverException.generationMismatch(ref, expectedGeneration.getAsLong(), r.generation);
        }
        if (r.state == SandboxState.STOPPED) {
            return new StopResult(r.observation(), false);
        }
        Resource stopped = new Resource(r.ref, r.generation, SandboxState.STOPPED, r.digest);
        write(stopped);
        notifyWatchers(new SandboxEvent.Snapshot(stopped.observation()));
        return new StopResult(stopped.observation(), true);
    }

    @Override
    public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
        enter(Method.DELETE, ref);
        return doDelete(ref, expectedGeneration);
    }

    private synchronized DeleteResult doDelete(SandboxRef ref, OptionalLong expectedGeneration) {
        Optional<Resource> found = read(ref.id());
        if (found.isEmpty()) {
            return new DeleteResult(false);
        }
        Resource r = found.get();
        if (!r.ref.equals(ref)) {
            throw DriverException.identityMismatch(ref, r.ref.workspace(), r.ref.name());
        }
        if (expectedGeneration.isPresent() && expectedGeneration.getAsLong() != r.generation) {
            throw DriverException.generationMismatch(ref, expectedGeneration.getAsLong(), r.generation);
        }
        removeBehindTheBack(ref.id());
        notifyWatchers(new SandboxEvent.Deleted(ref, r.generation));
        return new DeleteResult(true);
    }

    /** How many exec processes were closed by the gateway (a client's cancel, say) before their command ended. */
    public int closedExecs() {
        return closedExecs.get();
    }

    /** How many chunks of exec output the gateway took (its listener returned from {@code output}). */
    public int outputsTaken() {
        return outputsTaken.get();
    }

    /** Whether the thread of the last command waits (in the gateway's listener, say: a client that does not read). */
    public boolean lastExecWaits() {
        Thread thread = lastExec;
        return thread != null && thread.getState() == Thread.State.WAITING;
    }

    /** How many commands the fake ran (exec calls that passed its checks). */
    public int execs() {
        return execsRun.get();
    }

    /**
     * Runs a scripted command on a thread of its own, only in execution {@code generation} and only if it runs:
     * {@code echo WORDS} prints them, {@code cat} copies standard input to standard output until it closes, {@code
     * fail N TEXT} prints TEXT on standard error and exits N, {@code sleep} runs until closed, {@code flood N SIZE}
     * prints N chunks of SIZE bytes (counting each the gateway took: {@link #outputsTaken}), {@code lost} ends with
     * {@link ExecListener#failed} (the outcome unknown), {@code eager N} prints N bytes before exec returns. {@link #failNext}({@code EXEC}) refuses before anything runs.
     */
    @Override
    public ExecProcess exec(SandboxRef ref, long generation, ExecCommand command, ExecListener listener) {
        enter(Method.EXEC, ref);
        Resource r;
        synchronized (this) {
            r = verified(ref);
        }
        if (r.generation != generation) {
            throw DriverException.generationMismatch(ref, generation, r.generation);
        }
        if (r.state != SandboxState.RUNNING) {
            throw new DriverException(
                    DriverErrorCode.FAILED_PRECONDITION,
                    "execution " + generation + " does not run",
                    List.of(new Mismatch("running", "true", "false")),
                    null);
        }
        execsRun.incrementAndGet();
        if (command.command().getFirst().equals("eager")) { // output before the call returns, as a driver may
            for (int i = Integer.parseInt(command.command().get(1)); i > 0; i--) {
                listener.output(StreamKind.STDOUT, "x".getBytes(StandardCharsets.UTF_8));
            }
        }
        java.util.concurrent.LinkedBlockingQueue<byte[]> stdin = new java.util.concurrent.LinkedBlockingQueue<>();
        byte[] end = new byte[0];
        java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
        List<String> argv = command.command();
        Thread thread = new Thread(
                () -> {
                    try {
                        switch (argv.getFirst()) {
                            case "echo" ->
                                listener.output(
                                        StreamKind.STDOUT,
                                        (String.join(" ", argv.subList(1, argv.size())) + "\n")
                                                .getBytes(StandardCharsets.UTF_8));
                            case "cat" -> {
                                for (byte[] chunk = stdin.take(); chunk.length > 0; chunk = stdin.take()) {
                                    listener.output(StreamKind.STDOUT, chunk);
                                }
                            }
                            case "fail" -> {
                                listener.output(
                                        StreamKind.STDERR, (argv.get(2) + "\n").getBytes(StandardCharsets.UTF_8));
                                listener.exited(Integer.parseInt(argv.get(1)));
                                return;
                            }
                            case "sleep" -> {
                                stdin.take(); // until closed
                                return;
                            }
                            case "flood" -> {
                                byte[] chunk = new byte[Integer.parseInt(argv.get(2))];
                                for (int i = Integer.parseInt(argv.get(1)); i > 0 && !closed.get(); i--) {
                                    listener.output(StreamKind.STDOUT, chunk);
                                    outputsTaken.incrementAndGet();
                                }
                            }
                            case "eager" -> {} // its output went out before exec returned
                            case "lost" -> {
                                listener.failed(new DriverException(
                                        DriverErrorCode.UNAVAILABLE, "the execution ended while the command ran"));
                                return;
                            }
                            default -> {
                                listener.exited(127);
                                return;
                            }
                        }
                        listener.exited(0);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                },
                "fake-exec");
        thread.setDaemon(true);
        lastExec = thread;
        thread.start();
        return new ExecProcess() {
            @Override
            public void writeStdin(byte[] data) {
                if (data.length > 0) { // an empty chunk marks the end
                    stdin.add(data.clone());
                }
            }

            @Override
            public void closeStdin() {
                stdin.add(end);
            }

            @Override
            public void resize(TerminalSize size) {}

            @Override
            public void close() {
                if (closed.compareAndSet(false, true) && thread.isAlive()) {
                    closedExecs.incrementAndGet();
                    thread.interrupt();
                }
            }
        };
    }

    /** The output of execution {@code generation}: one line on each stream ({@code out G}, {@code err G}). */
    @Override
    public LogStream logs(SandboxRef ref, long generation, LogQuery query, LogListener listener) {
        Resource r;
        synchronized (this) {
            r = verified(ref);
        }
        if (r.generation != generation) {
            throw DriverException.generationMismatch(ref, generation, r.generation);
        }
        Thread thread = new Thread(
                () -> {
                    listener.output(StreamKind.STDOUT, ("out " + generation + "\n").getBytes(StandardCharsets.UTF_8));
                    listener.output(StreamKind.STDERR, ("err " + generation + "\n").getBytes(StandardCharsets.UTF_8));
                    listener.completed();
                },
                "fake-logs");
        thread.setDaemon(true);
        thread.start();
        return () -> {};
    }

    @Override
    public WatchSubscription watch(SandboxWatcher watcher) {
        synchronized (this) {
            for (Resource r : all()) {
                watcher.onEvent(new SandboxEvent.Snapshot(r.observation()));
            }
            watcher.onEvent(new SandboxEvent.Synced());
            watchers.add(watcher);
        }
        return () -> watchers.remove(watcher);
    }

    @Override
    public void close() {
        watchers.clear();
    }

    private void enter(Method method, SandboxRef ref) {
        calls.get(method).incrementAndGet();
        Consumer<SandboxRef> hook = beforeHooks.get(method);
        if (hook != null) {
            hook.accept(ref);
        }
        DriverException failure = failures.remove(method);
        if (failure == null) {
            failure = persistentFailures.get(method);
        }
        if (failure != null) {
            throw failure;
        }
    }

    private void notifyWatchers(SandboxEvent event) {
        for (SandboxWatcher watcher : watchers) {
            watcher.onEvent(event);
        }
    }

    private Resource verified(SandboxRef ref) {
        Resource r = read(ref.id()).orElseThrow(() -> DriverException.notFound(ref));
        if (!r.ref.workspace().equals(ref.workspace()) || !r.ref.name().equals(ref.name())) {
            throw DriverException.identityMismatch(ref, r.ref.workspace(), r.ref.name());
        }
        return r;
    }

    private record Resource(SandboxRef ref, long generation, SandboxState state, String digest) {
        SandboxObservation observation() {
            return new SandboxObservation(ref, generation, state, digest, Map.of(), "");
        }
    }

    private Path file(String sandboxId) {
        return directory.resolve(sandboxId + ".properties");
    }

    private Optional<Resource> read(String sandboxId) {
        Path file = file(sandboxId);
        if (!Files.exists(file)) {
            return Optional.empty();
        }
        Properties p = new Properties();
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            p.load(reader);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (!gatewayId.equals(p.getProperty("gateway"))) {
            return Optional.empty();
        }
        return Optional.of(new Resource(
                new SandboxRef(sandboxId, p.getProperty("workspace"), p.getProperty("name")),
                Long.parseLong(p.getProperty("generation")),
                SandboxState.valueOf(p.getProperty("state")),
                p.getProperty("digest")));
    }

    private List<Resource> all() {
        List<Resource> result = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, "*.properties")) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                read(name.substring(0, name.length() - ".properties".length())).ifPresent(result::add);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return result;
    }

    private void write(Resource r) {
        Properties p = new Properties();
        p.setProperty("gateway", gatewayId);
        p.setProperty("workspace", r.ref.workspace());
        p.setProperty("name", r.ref.name());
        p.setProperty("generation", Long.toString(r.generation));
        p.setProperty("state", r.state.name());
        p.setProperty("digest", r.digest);
        try {
            Path temp = Files.createTempFile(directory, ".fake", ".tmp");
            try (Writer writer = Files.newBufferedWriter(temp, StandardCharsets.UTF_8)) {
                p.store(writer, null);
            }
            Files.move(temp, file(r.ref.id()), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The fields this fake can enforce, for capability tests. */
    public static DriverCapabilities capabilitiesWithout(Set<PolicyField> missing, boolean launchPolicyOnStart) {
        Set<PolicyField> fields = EnumSet.allOf(PolicyField.class);
        fields.removeAll(missing);
        return new DriverCapabilities(fields, launchPolicyOnStart, true);
    }
}
