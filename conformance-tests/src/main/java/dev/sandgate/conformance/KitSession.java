package dev.sandgate.conformance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.LogStream;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.StartResult;
import dev.sandgate.spi.WatchSubscription;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiFunction;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.junit.jupiter.api.Assumptions;

/**
 * The state of one kit run (one test class): its gateway id, the driver and probe, what it created, and the helpers
 * the scenarios share.
 */
final class KitSession {
    static final String REQUIRE_ENGINES_PROPERTY = "sandgate.requireEngines";
    static final String WORKSPACE = "kit-a";
    static final String OTHER_WORKSPACE = "kit-b";

    private static final SecureRandom RANDOM = new SecureRandom();

    final String gatewayId = "kit-" + randomHex(8);
    final String foreignGatewayId = gatewayId + "-foreign";
    final KitMutationHook hook = new KitMutationHook();
    final ComputeDriverProvider provider;
    final DriverSettings config;
    final BackendProbe probe;
    final SandboxSpec spec;
    final Duration timeout;
    private final Supplier<SandboxSpec> refusedSpec;
    private final BiFunction<String, String, SandboxSpec> printingSpec;
    final ComputeDriver driver;
    final DriverCapabilities capabilities;
    final LaunchPolicy basePolicy;
    final LaunchPolicy otherPolicy;

    private final String testClassName;
    private final AtomicInteger launches = new AtomicInteger();
    private final AtomicInteger plants = new AtomicInteger();
    private final Set<SandboxRef> createdInTest = ConcurrentHashMap.newKeySet();
    private final Set<String> plantedInTest = ConcurrentHashMap.newKeySet();
    private final List<ComputeDriver> extraDrivers = new ArrayList<>();
    private final List<WatchSubscription> subscriptions = new ArrayList<>();
    private final List<AutoCloseable> openInTest = new ArrayList<>();

    private KitSession(
            String testClassName,
            ComputeDriverProvider provider,
            DriverSettings config,
            BackendProbe probe,
            SandboxSpec spec,
            Supplier<SandboxSpec> refusedSpec,
            BiFunction<String, String, SandboxSpec> printingSpec,
            Duration timeout) {
        this.testClassName = testClassName;
        this.refusedSpec = refusedSpec;
        this.printingSpec = printingSpec;
        this.provider = provider;
        this.config = config;
        this.probe = probe;
        this.spec = spec;
        this.timeout = timeout;
        this.driver = provider.create(config, context());
        this.capabilities = driver.capabilities();
        this.basePolicy = LaunchPolicies.kitBase(capabilities.enforceablePolicyFields());
        this.otherPolicy = LaunchPolicies.kitOther(capabilities.enforceablePolicyFields());
    }

    /**
     * Starts a kit run: checks the provider's availability (skips, or fails when {@value #REQUIRE_ENGINES_PROPERTY}
     * is true), then opens the probe and creates the driver.
     */
    static KitSession start(
            String testClassName,
            ComputeDriverProvider provider,
            DriverSettings config,
            Supplier<BackendProbe> probe,
            SandboxSpec spec,
            Supplier<SandboxSpec> refusedSpec,
            BiFunction<String, String, SandboxSpec> printingSpec,
            Duration timeout) {
        assertThat(provider).as("provider()").isNotNull();
        assertThat(config).as("config()").isNotNull();
        Availability availability = provider.availability(config);
        if (!availability.available()) {
            String message = "driver '" + provider.name() + "' is not available here: " + availability.reason();
            if (Boolean.getBoolean(REQUIRE_ENGINES_PROPERTY)) {
                fail(message + " (" + REQUIRE_ENGINES_PROPERTY + "=true: a missing backend is a failure)");
            }
            // Build tools may count a class skipped as a whole as neither run nor skipped: say so where people look.
            System.out.printf(
                    "[sandgate-kit] %s: SKIPPED, no test of the kit ran: %s (with -D%s=true this is a failure)%n",
                    testClassName, message, REQUIRE_ENGINES_PROPERTY);
            Assumptions.abort(message);
        }
        BackendProbe openedProbe = probe.get();
        assertThat(openedProbe).as("probe()").isNotNull();
        assertThat(spec).as("runningSpec()").isNotNull();
        try {
            return new KitSession(
                    testClassName, provider, config, openedProbe, spec, refusedSpec, printingSpec, timeout);
        } catch (RuntimeException | Error e) {
            openedProbe.close();
            throw e;
        }
    }

    DriverContext context() {
        return new DriverContext(gatewayId, Clock.systemUTC(), hook);
    }

    /** Another driver instance over the same backend and gateway id; closed when the kit finishes. */
    ComputeDriver newDriverInstance() {
        ComputeDriver instance = provider.create(config, context());
        synchronized (extraDrivers) {
            extraDrivers.add(instance);
        }
        return instance;
    }

    // ---- identities and inputs

    static String randomHex(int length) {
        byte[] bytes = new byte[(length + 1) / 2];
        RANDOM.nextBytes(bytes);
        return HexFormat.of().formatHex(bytes).substring(0, length);
    }

    /** A fresh sandbox in the kit's workspace, named {@code label-<6 hex>}. */
    SandboxRef newRef(String label) {
        return new SandboxRef(Identifiers.newSandboxId(), WORKSPACE, label + "-" + randomHex(6));
    }

    /** A fresh id with the same workspace and name as {@code ref}. */
    static SandboxRef sameNameNewId(SandboxRef ref) {
        return new SandboxRef(Identifiers.newSandboxId(), ref.workspace(), ref.name());
    }

    /** The driver's spec that the backend refuses for good, asked for only by the test that needs it. */
    SandboxSpec permanentlyRefusedSpec() {
        return refusedSpec.get();
    }

    /**
     * The driver's spec whose execution writes {@code stdoutLine} to its standard output and {@code stderrLine} to its
     * standard error, then keeps running; asked for only by the tests that read logs.
     */
    SandboxSpec printingSpec(String stdoutLine, String stderrLine) {
        SandboxSpec printing = printingSpec.apply(stdoutLine, stderrLine);
        assertThat(printing).as("printingSpec(...)").isNotNull();
        return printing;
    }

    LaunchInput launch(long generation) {
        return new LaunchInput(generation, basePolicy);
    }

    LaunchInput launch(long generation, LaunchPolicy policy) {
        return new LaunchInput(generation, policy);
    }

    // ---- driver calls that launch (counted)

    CreateResult create(SandboxRef ref, SandboxSpec sandboxSpec, LaunchInput input) {
        createdInTest.add(ref);
        CreateResult result = driver.create(ref, sandboxSpec, input);
        if (result.created()) {
            launches.incrementAndGet();
        }
        return result;
    }

    CreateResult create(SandboxRef ref, LaunchInput input) {
        return create(ref, spec, input);
    }

    StartResult start(SandboxRef ref, LaunchInput input) {
        return start(driver, ref, input);
    }

    StartResult start(ComputeDriver instance, SandboxRef ref, LaunchInput input) {
        StartResult result = instance.start(ref, input);
        if (result.launched()) {
            launches.incrementAndGet();
        }
        return result;
    }

    /** Creates {@code ref} at generation 1 with the base policy and waits until it runs. */
    SandboxObservation createRunning(SandboxRef ref) {
        return createRunning(ref, spec);
    }

    SandboxObservation createRunning(SandboxRef ref, SandboxSpec sandboxSpec) {
        CreateResult result = create(ref, sandboxSpec, launch(1));
        assertThat(result.created())
                .as("create of a new sandbox reports created")
                .isTrue();
        return awaitState(ref, SandboxState.RUNNING, 1);
    }

    /** Stops a running sandbox at {@code generation} and launches {@code generation + 1}; waits until it runs. */
    SandboxObservation restart(SandboxRef ref, long generation) {
        assertThat(driver.stop(ref, OptionalLong.of(generation)).stoppedNow())
                .as("stop of running %s", ref)
                .isTrue();
        assertThat(start(ref, launch(generation + 1)).launched())
                .as("start of %s at generation %s", ref, generation + 1)
                .isTrue();
        return awaitState(ref, SandboxState.RUNNING, generation + 1);
    }

    /** A sandbox created for a whole nested group; the caller deletes it. */
    SandboxObservation createFixture(SandboxRef ref) {
        return createFixture(ref, spec);
    }

    SandboxObservation createFixture(SandboxRef ref, SandboxSpec sandboxSpec) {
        CreateResult result = driver.create(ref, sandboxSpec, launch(1));
        if (result.created()) {
            launches.incrementAndGet();
        }
        return awaitState(ref, SandboxState.RUNNING, 1);
    }

    // ---- waiting

    /** Polls {@code get} until the sandbox reports {@code state} at {@code generation}, within the readiness timeout. */
    SandboxObservation awaitState(SandboxRef ref, SandboxState state, long generation) {
        return awaitObservation(
                driver,
                ref,
                observation -> observation.state() == state && observation.generation() == generation,
                state + " at generation " + generation);
    }

    SandboxObservation awaitObservation(
            ComputeDriver instance, SandboxRef ref, Predicate<SandboxObservation> condition, String description) {
        var last = new AtomicReference<Object>();
        return KitPolling.until(
                timeout,
                () -> {
                    try {
                        SandboxObservation observation = instance.get(ref);
                        last.set(observation);
                        return Optional.of(observation).filter(condition);
                    } catch (DriverException e) {
                        last.set(e.code() + ": " + e.getMessage());
                        return Optional.empty();
                    }
                },
                () -> String.format(
                        "%s did not report %s within %s; last answer: %s", ref, description, timeout, last.get()));
    }

    /** Polls the probe until no resource carries {@code sandboxId}, within the readiness timeout. */
    void awaitNoResource(String sandboxId, String why) {
        var left = new AtomicReference<List<BackendResource>>();
        KitPolling.until(
                timeout,
                () -> {
                    left.set(probe.resources(sandboxId));
                    return left.get().isEmpty() ? Optional.of(sandboxId) : Optional.empty();
                },
                () -> String.format(
                        "%s: resources still carry sandbox id %s after %s: %s", why, sandboxId, timeout, left.get()));
    }

    /**
     * Polls {@code get} until the sandbox is settled (gone, or RUNNING, STOPPED or FAILED); empty if it is gone.
     */
    Optional<SandboxObservation> awaitSettled(SandboxRef ref) {
        var last = new AtomicReference<SandboxObservation>();
        return KitPolling.until(
                timeout,
                () -> {
                    try {
                        last.set(driver.get(ref));
                    } catch (DriverException e) {
                        if (e.code() == DriverErrorCode.NOT_FOUND) {
                            return Optional.of(Optional.empty());
                        }
                        throw e;
                    }
                    return switch (last.get().state()) {
                        case RUNNING, STOPPED, FAILED -> Optional.of(Optional.of(last.get()));
                        case PROVISIONING, STOPPING, UNKNOWN -> Optional.empty();
                    };
                },
                () -> String.format("%s did not settle within %s: %s", ref, timeout, last.get()));
    }

    // ---- the probe

    BackendResource plant(SandboxRef ref, String plantGatewayId, String policyDigest) {
        plantedInTest.add(ref.id());
        return plantFixture(ref, plantGatewayId, policyDigest);
    }

    /** Plants a stopped resource ({@link BackendProbe#plantStopped}), removed after the test. */
    BackendResource plantStopped(SandboxRef ref, String plantGatewayId, String policyDigest) {
        plantedInTest.add(ref.id());
        BackendResource planted = probe.plantStopped(ref, plantGatewayId, policyDigest);
        plants.incrementAndGet();
        return planted;
    }

    /** Plants a resource that a nested group keeps for all its tests; the caller removes it. */
    BackendResource plantFixture(SandboxRef ref, String plantGatewayId, String policyDigest) {
        BackendResource planted = probe.plant(ref, plantGatewayId, policyDigest);
        plants.incrementAndGet();
        return planted;
    }

    /** The one resource carrying {@code sandboxId}. */
    BackendResource onlyResource(String sandboxId) {
        List<BackendResource> resources = probe.resources(sandboxId);
        assertThat(resources)
                .as("runtime resources carrying sandbox id %s", sandboxId)
                .hasSize(1);
        return resources.get(0);
    }

    ResourceFacts facts(String sandboxId) {
        return ResourceFacts.of(onlyResource(sandboxId));
    }

    /** Asserts that exactly one resource carries the id and that it is the same, unchanged, as {@code before}. */
    void assertUntouched(ResourceFacts before, String what) {
        List<BackendResource> now = probe.resources(before.sandboxId());
        assertThat(now)
                .as("%s: resources carrying sandbox id %s", what, before.sandboxId())
                .hasSize(1);
        assertThat(ResourceFacts.of(now.get(0)))
                .as("%s: the resource must be untouched (same backend id, running state, generation, stamps)", what)
                .isEqualTo(before);
    }

    // ---- watching

    /** A subscription with its recorder; closing ends the subscription. */
    record Watching(WatchSubscription subscription, EventRecorder events) implements AutoCloseable {
        @Override
        public void close() {
            subscription.close();
        }
    }

    Watching watch() {
        var recorder = new EventRecorder(timeout);
        WatchSubscription subscription = driver.watch(recorder);
        synchronized (subscriptions) {
            subscriptions.add(subscription);
        }
        return new Watching(subscription, recorder);
    }

    // ---- exec and logs

    /** Runs {@code command} in execution {@code generation} of {@code ref}; the process is closed after the test. */
    ExecProcess exec(SandboxRef ref, long generation, ExecCommand command, OutputRecorder recorder) {
        ExecProcess process = driver.exec(ref, generation, command, recorder);
        assertThat(process).as("exec's process").isNotNull();
        closeAfterTest(process);
        return process;
    }

    /** Reads the output of execution {@code generation} of {@code ref}; the read is closed after the test. */
    LogStream logs(SandboxRef ref, long generation, LogQuery query, OutputRecorder recorder) {
        LogStream stream = driver.logs(ref, generation, query, recorder);
        assertThat(stream).as("logs' stream").isNotNull();
        closeAfterTest(stream);
        return stream;
    }

    /** Runs {@code command} (without standard input) and waits until it ends. */
    OutputRecorder execToEnd(SandboxRef ref, long generation, ExecCommand command) {
        var recorder = new OutputRecorder(timeout);
        try (ExecProcess process = exec(ref, generation, command, recorder)) {
            recorder.awaitEnd("exec of " + command.command() + " in generation " + generation + " of " + ref);
        }
        recorder.assertKeptTheListenerContract("exec of " + command.command());
        return recorder;
    }

    /**
     * Reads the output of execution {@code generation} without following it, again and again until a read has
     * delivered every one of {@code texts} (output may reach the backend's log a little after the execution runs);
     * each read must complete. Returns the read that delivered them.
     */
    OutputRecorder readLogsUntil(SandboxRef ref, long generation, String... texts) {
        var last = new AtomicReference<OutputRecorder>();
        return KitPolling.until(
                timeout,
                () -> {
                    var recorder = new OutputRecorder(timeout);
                    try (LogStream stream = logs(ref, generation, new LogQuery(false, Optional.empty()), recorder)) {
                        OutputRecorder.End end = recorder.awaitEnd(
                                "a logs read (without follow) of generation " + generation + " of " + ref);
                        assertThat(end.completed())
                                .as(
                                        "a logs read without follow completes once it delivered the output so far, but"
                                                + " it %s",
                                        end)
                                .isTrue();
                    }
                    recorder.assertKeptTheListenerContract("a logs read of generation " + generation);
                    last.set(recorder);
                    String both = recorder.stdout() + recorder.stderr();
                    for (String text : texts) {
                        if (!both.contains(text)) {
                            return Optional.empty();
                        }
                    }
                    return Optional.of(recorder);
                },
                () -> String.format(
                        "logs of generation %d of %s did not show %s within %s; the last read: %s",
                        generation,
                        ref,
                        List.of(texts),
                        timeout,
                        last.get() == null ? "none" : last.get().describe()));
    }

    private void closeAfterTest(AutoCloseable closeable) {
        synchronized (openInTest) {
            openInTest.add(closeable);
        }
    }

    // ---- cleaning up

    /** After each test: deletes what the test created through the driver, removes what it planted. */
    void cleanUpTest() {
        hook.disarmAll();
        synchronized (openInTest) {
            for (AutoCloseable closeable : openInTest) {
                try {
                    closeable.close();
                } catch (Exception e) {
                    // closing is idempotent by contract; a failure to close is not what this clean-up checks
                }
            }
            openInTest.clear();
        }
        synchronized (subscriptions) {
            subscriptions.forEach(WatchSubscription::close);
            subscriptions.clear();
        }
        for (SandboxRef ref : List.copyOf(createdInTest)) {
            deleteThroughDriver(ref);
            createdInTest.remove(ref);
        }
        for (String id : List.copyOf(plantedInTest)) {
            probe.remove(id);
            plantedInTest.remove(id);
        }
    }

    /**
     * Deletes through the driver (so that a driver that leaks is caught after the class); only a sandbox the driver
     * cannot delete is removed through the probe.
     */
    void deleteThroughDriver(SandboxRef ref) {
        try {
            driver.delete(ref, OptionalLong.empty());
        } catch (DriverException e) {
            probe.remove(ref.id());
        }
    }

    /**
     * After the class: nothing the kit created may survive. Removes leftovers through the probe, then fails naming
     * them. Prints the number of launches for the driver's author.
     */
    void finish() {
        AssertionError failure = null;
        try {
            failure = removeSurvivors();
        } finally {
            synchronized (extraDrivers) {
                extraDrivers.forEach(ComputeDriver::close);
            }
            driver.close();
            probe.close();
            System.out.printf(
                    "[sandgate-kit] %s: driver '%s' launched %d times (creates and starts that launched); the probe"
                            + " planted %d resources%n",
                    testClassName, provider.name(), launches.get(), plants.get());
        }
        if (failure != null) {
            throw failure;
        }
    }

    /**
     * The kit's last test (and again after the class, for a run that filtered it out): what the kit created must be
     * gone once every test deleted it through the driver. Removes the survivors, then fails naming them.
     */
    void assertNothingSurvives() {
        AssertionError failure = removeSurvivors();
        if (failure != null) {
            throw failure;
        }
    }

    private AssertionError removeSurvivors() {
        cleanUpTest();
        List<BackendResource> leftovers = probe.resourcesOfGateway(gatewayId);
        for (BackendResource leftover : leftovers) {
            String id = leftover.stamp(Labels.SANDBOX_ID);
            if (id != null) {
                probe.remove(id);
            }
        }
        return leftovers.isEmpty()
                ? null
                : new AssertionError("resources of gateway " + gatewayId
                        + " survived the kit although it deleted every sandbox it created: " + leftovers);
    }

    int launches() {
        return launches.get();
    }
}
