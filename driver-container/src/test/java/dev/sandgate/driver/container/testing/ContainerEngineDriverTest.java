package dev.sandgate.driver.container.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.HostConfig;
import dev.sandgate.conformance.BackendResource;
import dev.sandgate.conformance.LaunchPolicies;
import dev.sandgate.driver.container.ContainerEngineProvider;
import dev.sandgate.driver.container.ContainerNaming;
import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.StaticPolicy;
import dev.sandgate.spi.StreamKind;
import dev.sandgate.spi.WatchSubscription;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * What the container drivers do on a real engine beyond the conformance kit: the engine's init, the launch policy as
 * the engine applies it, one container per execution on one workspace volume, the spec carried between executions,
 * image pulls, watch events and reconnects, availability. Each engine module extends it with its engine and provider.
 *
 * <p>Everything a test creates carries this class's gateway id; after the class nothing carrying it may remain.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class ContainerEngineDriverTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final long MIB = 1024L * 1024;

    /** Linux capabilities by number (linux/capability.h): bit n of a {@code CapBnd} mask is the n-th. */
    private static final List<String> CAPABILITY_BITS = List.of(
            "CHOWN",
            "DAC_OVERRIDE",
            "DAC_READ_SEARCH",
            "FOWNER",
            "FSETID",
            "KILL",
            "SETGID",
            "SETUID",
            "SETPCAP",
            "LINUX_IMMUTABLE",
            "NET_BIND_SERVICE",
            "NET_BROADCAST",
            "NET_ADMIN",
            "NET_RAW",
            "IPC_LOCK",
            "IPC_OWNER",
            "SYS_MODULE",
            "SYS_RAWIO",
            "SYS_CHROOT",
            "SYS_PTRACE",
            "SYS_PACCT",
            "SYS_ADMIN",
            "SYS_BOOT",
            "SYS_NICE",
            "SYS_RESOURCE",
            "SYS_TIME",
            "SYS_TTY_CONFIG",
            "MKNOD",
            "LEASE",
            "AUDIT_WRITE",
            "AUDIT_CONTROL",
            "SETFCAP",
            "MAC_OVERRIDE",
            "MAC_ADMIN",
            "SYSLOG",
            "WAKE_ALARM",
            "BLOCK_SUSPEND",
            "AUDIT_READ",
            "PERFMON",
            "BPF",
            "CHECKPOINT_RESTORE");

    protected final String gatewayId =
            "engine-test-" + UUID.randomUUID().toString().substring(0, 8);
    protected DockerJavaBackendProbe probe;
    protected ComputeDriver driver;
    private final List<SandboxRef> created = new ArrayList<>();
    private final List<ComputeDriver> extraDrivers = new ArrayList<>();

    /** The engine under test. */
    protected abstract TestEngine engine();

    /** The provider of the engine's driver. */
    protected abstract ContainerEngineProvider provider();

    /** What the engine's inspect output says for a container on its default network. */
    protected abstract String inspectedDefaultNetworkMode();

    /** The driver settings for this engine (its host); subclasses may add settings. */
    protected DriverSettings config() {
        return engine().driverConfig(provider().name());
    }

    @BeforeAll
    final void connect() {
        engine().requireAvailable();
        probe = new DockerJavaBackendProbe(engine());
        driver = provider().create(config(), DriverContext.of(gatewayId));
    }

    @AfterEach
    final void deleteWhatTheTestCreated() {
        for (SandboxRef ref : created) {
            try {
                driver.delete(ref, OptionalLong.empty());
            } catch (DriverException e) {
                probe.remove(ref.id());
            }
        }
        created.clear();
        extraDrivers.forEach(ComputeDriver::close);
        extraDrivers.clear();
    }

    @AfterAll
    final void nothingOfThisClassSurvives() {
        if (probe == null) {
            return;
        }
        driver.close();
        List<BackendResource> leftovers = probe.resourcesOfGateway(gatewayId);
        leftovers.forEach(resource -> probe.remove(resource.stamp(dev.sandgate.spi.Labels.SANDBOX_ID)));
        probe.close();
        assertThat(leftovers)
                .as("resources of gateway %s left behind", gatewayId)
                .isEmpty();
    }

    // ---- the engine's init and the stop grace period

    @Test
    void containersRunUnderTheEnginesInitAsProcessOne() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        String containerId = probe.runningContainer(ref);

        assertThat(inspect(containerId).getHostConfig().getInit()).isTrue();
        String processOne =
                probe.exec(containerId, "cat", "/proc/1/cmdline").stdout().replace('\0', ' ');
        assertThat(processOne).as("PID 1 of the container").contains("init").doesNotStartWith("sleep");
    }

    @Test
    void stopEndsAShellLoopWithSigtermBecauseTheShellIsNotProcessOne() {
        SandboxRef ref =
                createRunning(spec(List.of("/bin/sh", "-c", "while :; do sleep 1; done")), StaticPolicy.DEFAULT);

        SandboxObservation stopped = driver.stop(ref, OptionalLong.of(1)).observation();

        assertThat(stopped.state()).isEqualTo(SandboxState.STOPPED);
        assertThat(stopped.detail())
                .as("143 is SIGTERM; 137 would mean the grace period ran out and SIGKILL ended it")
                .isEqualTo("exited with code 143");
    }

    @Test
    void aProcessIgnoringSigtermIsKilledWhenTheConfiguredGracePeriodEnds() {
        ComputeDriver impatient = extraDriver(config().with(provider().name() + ".stop-grace-period", "1s"));
        SandboxRef ref = newRef("stubborn");
        created.add(ref);
        impatient.create(
                ref,
                spec(List.of("/bin/sh", "-c", "trap '' TERM; touch /tmp/trapped; while :; do sleep 1; done")),
                launch(1, StaticPolicy.DEFAULT));
        // A stop sent before the shell set its trap would end it with SIGTERM (143): wait until the trap is set.
        String containerId = probe.runningContainer(ref);
        await().atMost(TIMEOUT)
                .until(() ->
                        probe.exec(containerId, "test", "-e", "/tmp/trapped").exitCode() == 0);

        SandboxObservation stopped = impatient.stop(ref, OptionalLong.of(1)).observation();

        assertThat(stopped.state()).isEqualTo(SandboxState.STOPPED);
        assertThat(stopped.detail())
                .as("137 is SIGKILL, sent when the grace period ran out")
                .isEqualTo("exited with code 137");
    }

    // ---- launch policy

    @Test
    void theLaunchPolicyIsAppliedAsTheEngineReportsIt() {
        var policy = new StaticPolicy(true, NetworkMode.NONE, Set.of("NET_RAW", "MKNOD"), true, 64 * MIB, 250, 64);
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), policy);

        var hostConfig = inspect(onlyContainer(ref)).getHostConfig();

        assertThat(hostConfig.getReadonlyRootfs()).isTrue();
        assertThat(hostConfig.getNetworkMode()).isEqualTo("none");
        assertThat(hostConfig.getCapDrop()).contains(Capability.NET_RAW, Capability.MKNOD);
        assertThat(hostConfig.getSecurityOpts()).contains("no-new-privileges");
        assertThat(hostConfig.getMemory()).isEqualTo(64 * MIB);
        assertThat(hostConfig.getNanoCPUs()).isEqualTo(250_000_000L);
        assertThat(hostConfig.getPidsLimit()).isEqualTo(64L);
    }

    /**
     * The kit trusts {@link DockerJavaBackendProbe#appliedPolicy}, which reads the engine's inspect output; this
     * checks that reading against what the kernel applies to the container's process one (its bounding capabilities
     * and no_new_privs, its cgroup limits, its mounts and network interfaces), for the shapes in which each engine
     * reports capabilities: dropped by name, all dropped, the engine's defaults, and added back.
     */
    @Test
    void theProbeReportsWhatTheKernelAppliesToTheContainer() {
        var strict = new StaticPolicy(true, NetworkMode.NONE, Set.of("NET_RAW", "SYS_ADMIN"), true, 64 * MIB, 250, 64);
        var allDropped = new StaticPolicy(false, NetworkMode.NONE, Set.of("ALL"), false, 0, 1500, 0);
        for (StaticPolicy policy : List.of(strict, allDropped, StaticPolicy.DEFAULT, LaunchPolicies.unrestricted())) {
            SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), policy);
            assertTheProbeReportsWhatTheKernelApplies(ref, probe.runningContainer(ref));
        }

        SandboxRef added = newRef("capabilities-added");
        String containerId = probe.client()
                .createContainerCmd(engine().image())
                .withLabels(Map.of(Labels.SANDBOX_ID, added.id(), Labels.GATEWAY_ID, gatewayId))
                .withCmd(TestEngine.SLEEP_FOREVER)
                .withHostConfig(HostConfig.newHostConfig()
                        .withNetworkMode("none")
                        .withCapDrop(Capability.ALL)
                        .withCapAdd(Capability.CHOWN, Capability.SYS_ADMIN))
                .exec()
                .getId();
        try {
            probe.client().startContainerCmd(containerId).exec();
            StaticPolicy applied = assertTheProbeReportsWhatTheKernelApplies(added, containerId);
            assertThat(applied.dropCapabilities()).doesNotContain("ALL", "CHOWN", "SYS_ADMIN");
        } finally {
            probe.remove(added.id());
        }
    }

    private StaticPolicy assertTheProbeReportsWhatTheKernelApplies(SandboxRef ref, String containerId) {
        StaticPolicy applied = probe.appliedPolicy(ref).staticPolicy();
        String status = probe.exec(containerId, "cat", "/proc/1/status").stdout();
        String mask = statusField(status, "CapBnd");
        long bounding = Long.parseUnsignedLong(mask, 16);
        for (int bit = 0; bit < CAPABILITY_BITS.size(); bit++) {
            String capability = CAPABILITY_BITS.get(bit);
            boolean reportedDropped = applied.dropCapabilities().contains("ALL")
                    || applied.dropCapabilities().contains(capability);
            assertThat(reportedDropped)
                    .as("%s reported dropped (%s) while the bounding set of PID 1 is %s", capability, applied, mask)
                    .isEqualTo((bounding & (1L << bit)) == 0);
        }
        assertThat(applied.noNewPrivileges())
                .as("no-new-privileges reported (%s) against NoNewPrivs of PID 1", applied)
                .isEqualTo(statusField(status, "NoNewPrivs").equals("1"));

        String[] limits = probe.exec(
                        containerId,
                        "sh",
                        "-c",
                        "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max;"
                                + " cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max;"
                                + " cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us"
                                + " 2>/dev/null || cat /sys/fs/cgroup/cpu.max")
                .stdout()
                .strip()
                .split("\\s+");
        assertThat(limits)
                .as("memory, pids and cpu limits read in the container")
                .hasSize(4);
        long memory = limits[0].equals("max") ? Long.MAX_VALUE : Long.parseLong(limits[0]);
        if (applied.memoryLimitBytes() == 0) {
            assertThat(memory).as("memory limit of an unlimited container").isGreaterThan(1L << 60);
        } else {
            assertThat(memory).as("memory limit").isEqualTo(applied.memoryLimitBytes());
        }
        assertThat(limits[1].equals("max") ? 0 : Long.parseLong(limits[1]))
                .as("pids limit")
                .isEqualTo(applied.pidsLimit());
        long quota = limits[2].equals("max") ? -1 : Long.parseLong(limits[2]);
        assertThat(quota < 0 ? 0 : Math.ceilDiv(quota * 1000, Long.parseLong(limits[3])))
                .as("cpu limit in millicores")
                .isEqualTo(applied.cpuLimitMillis());

        String rootOptions = probe.exec(containerId, "awk", "$2 == \"/\" { print $4 }", "/proc/1/mounts")
                .stdout()
                .strip();
        assertThat(rootOptions.split("[,\\s]+", -1)[0].equals("ro"))
                .as("read-only root reported (%s) against the options of / (%s)", applied, rootOptions)
                .isEqualTo(applied.readOnlyRootFilesystem());
        String interfaces =
                probe.exec(containerId, "ls", "/sys/class/net").stdout().strip();
        assertThat(interfaces.equals("lo"))
                .as("network none reported (%s) against the interfaces %s", applied, interfaces)
                .isEqualTo(applied.networkMode() == NetworkMode.NONE);
        return applied;
    }

    private static String statusField(String status, String field) {
        return status.lines()
                .filter(line -> line.startsWith(field + ":"))
                .map(line -> line.substring(field.length() + 1).strip())
                .findFirst()
                .orElseThrow(() -> new AssertionError("/proc/1/status has no " + field + ":\n" + status));
    }

    @Test
    void theMemoryLimitIsEnforcedByTheContainersCgroup() {
        var policy = new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, 48 * MIB, 0, 0);
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), policy);

        String limit = probe.exec(
                        probe.runningContainer(ref),
                        "sh",
                        "-c",
                        "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max")
                .stdout()
                .strip();

        assertThat(limit).isEqualTo(Long.toString(48 * MIB));
    }

    @Test
    void theDefaultNetworkPolicyUsesTheEnginesDefaultNetwork() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), LaunchPolicies.unrestricted());

        assertThat(inspect(onlyContainer(ref)).getHostConfig().getNetworkMode())
                .isEqualTo(inspectedDefaultNetworkMode());
    }

    @Test
    void networkNoneLeavesOnlyTheLoopbackInterface() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);

        String interfaces =
                probe.exec(probe.runningContainer(ref), "ls", "/sys/class/net").stdout();

        assertThat(interfaces.strip().split("\\s+")).containsExactly("lo");
    }

    @Test
    void aReadOnlyRootFilesystemRefusesWritesOutsideTheWorkspace() {
        var readOnly = new StaticPolicy(true, NetworkMode.NONE, Set.of(), false, 0, 0, 0);
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), readOnly);
        String containerId = probe.runningContainer(ref);

        assertThat(probe.exec(containerId, "touch", "/outside").exitCode()).isNotZero();
        assertThat(probe.exec(containerId, "touch", ContainerNaming.WORKSPACE_PATH + "/inside")
                        .exitCode())
                .isZero();
    }

    @Test
    void aPolicyNarrowedAtStartTakesEffectInTheNextExecution() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        assertThat(probe.exec(probe.runningContainer(ref), "touch", "/before").exitCode())
                .isZero();
        driver.stop(ref, OptionalLong.of(1));

        var readOnly = new StaticPolicy(true, NetworkMode.NONE, Set.of(), false, 0, 0, 0);
        driver.start(ref, launch(2, readOnly));

        String containerId = probe.runningContainer(ref);
        assertThat(inspect(containerId).getHostConfig().getReadonlyRootfs()).isTrue();
        assertThat(probe.exec(containerId, "touch", "/after").exitCode()).isNotZero();
    }

    @Test
    void unenforceableOrInapplicablePoliciesAreRefusedBeforeAnythingIsCreated() {
        LaunchPolicy allowList =
                LaunchPolicies.of(1, LaunchPolicies.unrestricted(), new DynamicPolicy(List.of("example.org:443")));
        var tooLittleMemory = new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, MIB, 0, 0);
        var unknownCapability = new StaticPolicy(false, NetworkMode.NONE, Set.of("NOT_A_CAPABILITY"), false, 0, 0, 0);
        SandboxRef ref = newRef("refused");
        created.add(ref);

        assertCode(
                DriverErrorCode.UNSUPPORTED,
                () -> driver.create(ref, spec(TestEngine.SLEEP_FOREVER), new LaunchInput(1, allowList)));
        assertCode(
                DriverErrorCode.INVALID_ARGUMENT,
                () -> driver.create(ref, spec(TestEngine.SLEEP_FOREVER), launch(1, tooLittleMemory)));
        assertCode(
                DriverErrorCode.UNSUPPORTED,
                () -> driver.create(ref, spec(TestEngine.SLEEP_FOREVER), launch(1, unknownCapability)));

        assertThat(probe.resources(ref.id())).isEmpty();
        assertThat(probe.volumeNames(ref.id())).isEmpty();
    }

    @Test
    void aRefusedStartLeavesTheStoppedContainerAsItWas() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        driver.stop(ref, OptionalLong.of(1));
        BackendResource stopped = probe.resources(ref.id()).get(0);
        var tooLittleMemory = new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, MIB, 0, 0);

        assertCode(DriverErrorCode.INVALID_ARGUMENT, () -> driver.start(ref, launch(2, tooLittleMemory)));

        assertThat(probe.resources(ref.id())).containsExactly(stopped);
    }

    // ---- one container per execution, one workspace

    @Test
    void everyStartCreatesANewContainerOnTheSameWorkspaceAndRemovesThePreviousOne() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        String first = onlyContainer(ref);
        driver.stop(ref, OptionalLong.of(1));

        driver.start(ref, launch(2, StaticPolicy.DEFAULT));

        String second = onlyContainer(ref);
        assertThat(second).isNotEqualTo(first);
        assertThatThrownBy(() -> probe.client().inspectContainerCmd(first).exec())
                .isInstanceOf(NotFoundException.class);
        assertThat(probe.volumeNames(ref.id())).containsExactly(ContainerNaming.volumeName(ref.id()));
        assertThat(inspect(second).getMounts()).anySatisfy(mount -> {
            assertThat(mount.getName()).isEqualTo(ContainerNaming.volumeName(ref.id()));
            assertThat(mount.getDestination().getPath()).isEqualTo(ContainerNaming.WORKSPACE_PATH);
        });
        assertThat(inspect(second).getName()).endsWith("-g2");
    }

    @Test
    void aRelaunchAtTheSameGenerationGetsAContainerOfItsOwn() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        String first = onlyContainer(ref);
        driver.stop(ref, OptionalLong.of(1));

        assertThat(driver.start(ref, launch(1, StaticPolicy.DEFAULT)).launched())
                .isTrue();

        String relaunched = onlyContainer(ref);
        assertThat(relaunched).isNotEqualTo(first);
        assertThat(inspect(relaunched).getName()).endsWith("-g1-2");
        assertThat(driver.get(ref).state()).isEqualTo(SandboxState.RUNNING);
    }

    @Test
    void anExecForAnOlderGenerationAfterStopAndStartIsRefusedAndNeverRuns() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        driver.stop(ref, OptionalLong.of(1));
        driver.start(ref, launch(2, StaticPolicy.DEFAULT));

        DriverException refused = assertCode(
                DriverErrorCode.FAILED_PRECONDITION,
                () -> driver.exec(ref, 1, ExecCommand.of("touch", "/tmp/from-generation-1"), new ExitRecorder()));

        assertThat(refused.mismatches())
                .containsExactly(new dev.sandgate.spi.Mismatch(dev.sandgate.spi.Mismatch.GENERATION, "1", "2"));
        var probeExec = new ExitRecorder();
        driver.exec(ref, 2, ExecCommand.of("test", "-e", "/tmp/from-generation-1"), probeExec);
        assertThat(probeExec.exit).succeedsWithin(TIMEOUT).isEqualTo(1);
    }

    @Test
    void anExecIntoAStoppedExecutionIsRefusedWithTheRunningMismatch() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        driver.stop(ref, OptionalLong.of(1));

        DriverException refused = assertCode(
                DriverErrorCode.FAILED_PRECONDITION,
                () -> driver.exec(ref, 1, ExecCommand.of("true"), new ExitRecorder()));

        assertThat(refused.mismatches())
                .extracting(dev.sandgate.spi.Mismatch::subject)
                .containsExactly("running");
    }

    /** Records the exit code of an exec, or its failure. */
    private static final class ExitRecorder implements ExecListener {
        final CompletableFuture<Integer> exit = new CompletableFuture<>();

        @Override
        public void output(StreamKind stream, byte[] data) {}

        @Override
        public void exited(int exitCode) {
            exit.complete(exitCode);
        }

        @Override
        public void failed(DriverException error) {
            exit.completeExceptionally(error);
        }
    }

    @Test
    void aCreateRetriedAfterItsContainerWasCreatedButNeverStartedStartsIt() {
        SandboxRef ref = newRef("half-created");
        created.add(ref);
        LaunchInput launch = launch(1, StaticPolicy.DEFAULT);
        BackendResource leftOver =
                probe.plantCreated(ref, gatewayId, launch.policy().digest());
        assertThat(leftOver.running()).isFalse();

        var result = driver.create(ref, spec(TestEngine.SLEEP_FOREVER), launch);

        assertThat(result.created()).isFalse();
        assertThat(result.observation().state()).isEqualTo(SandboxState.RUNNING);
        assertThat(probe.resources(ref.id())).singleElement().satisfies(resource -> {
            assertThat(resource.backendId()).isEqualTo(leftOver.backendId());
            assertThat(resource.running()).isTrue();
        });
    }

    @Test
    void theSpecIsCarriedFromOneExecutionToTheNext() {
        var spec = new SandboxSpec(
                engine().image(),
                List.of("/bin/sh", "-c"),
                List.of("exec sleep 2147483647"),
                Map.of("GREETING", "hello"),
                Map.of("team", "blue"),
                ResourceRequests.NONE);
        SandboxRef ref = newRef("carried");
        created.add(ref);
        driver.create(ref, spec, launch(1, StaticPolicy.DEFAULT));
        driver.stop(ref, OptionalLong.of(1));

        SandboxObservation second =
                driver.start(ref, launch(2, StaticPolicy.DEFAULT)).observation();

        assertThat(second.labels()).isEqualTo(Map.of("team", "blue"));
        InspectContainerResponse container = inspect(onlyContainer(ref));
        assertThat(container.getConfig().getImage()).isEqualTo(engine().image());
        assertThat(container.getConfig().getEntrypoint()).containsExactly("/bin/sh", "-c");
        assertThat(container.getConfig().getCmd()).containsExactly("exec sleep 2147483647");
        assertThat(probe.exec(container.getId(), "sh", "-c", "printf %s \"$GREETING\"")
                        .stdout())
                .isEqualTo("hello");
    }

    @Test
    void observationsReportTheUsersLabelsButNotTheImagesLabels() {
        Map<String, String> imageLabels = probe.client()
                .inspectImageCmd(engine().image())
                .exec()
                .getConfig()
                .getLabels();
        assertThat(imageLabels).as("labels of the test image itself").isNotEmpty();
        SandboxRef ref = newRef("image-labels");
        created.add(ref);
        var spec = new SandboxSpec(
                engine().image(),
                TestEngine.SLEEP_FOREVER,
                List.of(),
                Map.of(),
                Map.of("team", "blue"),
                ResourceRequests.NONE);

        SandboxObservation observation =
                driver.create(ref, spec, launch(1, StaticPolicy.DEFAULT)).observation();

        assertThat(inspect(onlyContainer(ref)).getConfig().getLabels())
                .as("the engine merges the image's labels into the container's")
                .containsAllEntriesOf(imageLabels);
        assertThat(observation.labels()).isEqualTo(Map.of("team", "blue"));
        assertThat(driver.get(ref).labels()).isEqualTo(Map.of("team", "blue"));
    }

    @Test
    void deleteRemovesTheContainersAndTheWorkspaceVolume() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        driver.stop(ref, OptionalLong.of(1));
        driver.start(ref, launch(2, StaticPolicy.DEFAULT));

        assertThat(driver.delete(ref, OptionalLong.of(2)).deleted()).isTrue();

        assertThat(probe.resources(ref.id())).isEmpty();
        assertThat(probe.volumeNames(ref.id())).isEmpty();
    }

    // ---- several driver instances on one engine (gateway replicas; only the leader watches)

    @Test
    void anInstanceThatMissedAnotherInstancesRelaunchStopsTheNewExecution() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        ComputeDriver follower = instanceThatSawGenerationTwo(ref);
        ComputeDriver other = extraDriver(config());
        other.stop(ref, OptionalLong.of(2));
        other.start(ref, launch(3, StaticPolicy.DEFAULT));

        SandboxObservation stopped = follower.stop(ref, OptionalLong.of(3)).observation();

        assertThat(stopped.generation()).isEqualTo(3);
        assertThat(stopped.state()).isEqualTo(SandboxState.STOPPED);
        assertThat(inspect(onlyContainer(ref)).getState().getRunning()).isFalse();
        SandboxObservation seen = follower.get(ref);
        assertThat(seen.generation()).isEqualTo(3);
        assertThat(seen.state()).isEqualTo(SandboxState.STOPPED);
    }

    @Test
    void anInstanceThatMissedAnotherInstancesRelaunchDeletesTheNewExecution() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        ComputeDriver follower = instanceThatSawGenerationTwo(ref);
        ComputeDriver other = extraDriver(config());
        other.stop(ref, OptionalLong.of(2));
        other.start(ref, launch(3, StaticPolicy.DEFAULT));

        assertThat(follower.delete(ref, OptionalLong.of(3)).deleted()).isTrue();

        assertThat(probe.resources(ref.id())).isEmpty();
        assertThat(probe.volumeNames(ref.id())).isEmpty();
    }

    @Test
    void anInstanceThatStartsToWatchForgetsWhatItKnewWithoutAWatch() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        ComputeDriver follower = instanceThatSawGenerationTwo(ref);
        ComputeDriver other = extraDriver(config());
        assertThat(other.delete(ref, OptionalLong.of(2)).deleted()).isTrue();

        // The replica leads now: it watches, and the engine's events tell it of what changes from here on only.
        try (var watching = watch(follower)) {
            assertThat(follower.delete(ref, OptionalLong.of(2)).deleted()).isFalse();
        }
        assertThat(probe.resources(ref.id())).isEmpty();
    }

    /** A driver instance without a watch that launched generation 2 of {@code ref} itself, so it knows that one. */
    private ComputeDriver instanceThatSawGenerationTwo(SandboxRef ref) {
        ComputeDriver instance = extraDriver(config());
        instance.stop(ref, OptionalLong.of(1));
        instance.start(ref, launch(2, StaticPolicy.DEFAULT));
        return instance;
    }

    // ---- images

    @Test
    void anInvalidImageReferenceIsRefusedBeforeAnythingIsCreated() {
        SandboxRef ref = newRef("bad-image");

        DriverException refused = assertCode(
                DriverErrorCode.INVALID_ARGUMENT,
                () -> driver.create(
                        ref, spec("Not//An:Image", TestEngine.SLEEP_FOREVER), launch(1, StaticPolicy.DEFAULT)));

        assertThat(refused.getMessage()).startsWith("spec.image:");
        assertThat(probe.resources(ref.id())).isEmpty();
    }

    @Test
    void anAbsentImageIsPulledAndAFailedPullIsPermanentSaysWhyAndLeavesNothing() {
        // A registry address on loopback where nothing listens: the engine answers that the pull failed, which the
        // same create can never change (permanent: INVALID_ARGUMENT on spec.image, not retried).
        String absent = "127.0.0.1:1/sandgate/absent:" + gatewayId;
        SandboxRef ref = newRef("absent-image");

        DriverException refused = assertCode(
                DriverErrorCode.INVALID_ARGUMENT,
                () -> driver.create(ref, spec(absent, TestEngine.SLEEP_FOREVER), launch(1, StaticPolicy.DEFAULT)));

        assertThat(refused.getMessage())
                .startsWith("spec.image:")
                .contains("image '" + absent + "'")
                .contains("pulling it failed")
                .containsIgnoringCase("connection refused")
                .doesNotContain("NullPointerException");
        assertThat(probe.resources(ref.id())).isEmpty();
        assertThat(probe.volumeNames(ref.id())).isEmpty();
    }

    // ---- watch

    @Test
    void aProcessThatExitsOnItsOwnIsReportedAsAPlatformEventAndAFailedSnapshot() {
        try (var watching = watch(driver)) {
            watching.watcher().await(0, SandboxEvent.Synced.class::isInstance, "Synced");
            SandboxRef ref = newRef("exits");
            created.add(ref);

            driver.create(ref, spec(List.of("/bin/sh", "-c", "exit 3")), launch(1, StaticPolicy.DEFAULT));

            watching.watcher()
                    .await(
                            0,
                            event -> event instanceof SandboxEvent.Platform platform
                                    && platform.ref().equals(ref)
                                    && platform.generation() == 1
                                    && platform.type().equals("exited")
                                    && platform.message().contains("code 3"),
                            "an exit platform event");
            watching.watcher().await(0, snapshot(ref, SandboxState.FAILED, 1), "a FAILED snapshot");
            assertThat(driver.get(ref).detail()).isEqualTo("exited with code 3");
        }
    }

    @Test
    void aSandboxChangedWhileTheDriversCallOnItRunsIsLookedAtOnlyOnceTheCallHasEnded() {
        SandboxRef busy = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        SandboxRef idle = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        String busyContainer = probe.runningContainer(busy);
        String idleContainer = probe.runningContainer(idle);
        // The hook runs while the driver holds the busy sandbox's lock, just before its stop.
        AtomicReference<Runnable> beforeStop = new AtomicReference<>(() -> {});
        MutationHook hook = (ref, operation, backendId) -> {
            if (operation == MutationHook.Operation.STOP) {
                beforeStop.get().run();
            }
        };
        ComputeDriver hooked = provider().create(config(), new DriverContext(gatewayId, Clock.systemUTC(), hook));
        extraDrivers.add(hooked);
        try (var watching = watch(hooked)) {
            RecordingWatcher watcher = watching.watcher();
            int synced = watcher.await(0, SandboxEvent.Synced.class::isInstance, "Synced");
            AtomicReference<List<SandboxEvent>> duringTheCall = new AtomicReference<>();
            beforeStop.set(() -> {
                // Out of band: the busy sandbox's container stops, then the idle one's. The watch handles events in
                // order, so once the idle sandbox's change is reported, the busy one's events have been handled too.
                probe.client().stopContainerCmd(busyContainer).withTimeout(5).exec();
                probe.client().stopContainerCmd(idleContainer).withTimeout(5).exec();
                int idleStopped = watcher.await(synced, snapshot(idle, SandboxState.STOPPED, 1), "the idle STOPPED");
                duringTheCall.set(watcher.events().subList(synced, idleStopped + 1));
            });

            SandboxObservation stopped = hooked.stop(busy, OptionalLong.of(1)).observation();

            assertThat(stopped.state()).isEqualTo(SandboxState.STOPPED);
            assertThat(duringTheCall.get())
                    .as("events reported while the stop of the busy sandbox held its lock")
                    .noneMatch(event -> event instanceof SandboxEvent.Snapshot snapshot
                            && snapshot.observation().ref().equals(busy))
                    .anyMatch(snapshot(idle, SandboxState.STOPPED, 1));
            watcher.await(synced, snapshot(busy, SandboxState.STOPPED, 1), "the busy STOPPED after the call");
        }
    }

    @Test
    void aContainerPlantedBehindTheDriversBackIsReportedAlthoughTheDriverKnewTheSandbox() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        // The stop leaves the sandbox's container in the driver's index: the watch would look only at that one.
        driver.stop(ref, OptionalLong.of(1));
        try (var watching = watch(driver)) {
            RecordingWatcher watcher = watching.watcher();
            int synced = watcher.await(0, SandboxEvent.Synced.class::isInstance, "Synced");

            probe.plant(ref, gatewayId, launch(1, StaticPolicy.DEFAULT).policy().digest());

            watcher.await(
                    synced, snapshot(ref, SandboxState.RUNNING, 1), "a RUNNING snapshot of the planted container");
        }
    }

    @Test
    void aWatchResyncsAfterItsConnectionToTheEngineDrops() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        try (var relay = new EngineRelay(engine().host())) {
            ComputeDriver relayed = extraDriver(config().with(provider().name() + ".host", relay.host()));
            try (var watching = watch(relayed)) {
                RecordingWatcher watcher = watching.watcher();
                int firstSync = watcher.await(0, SandboxEvent.Synced.class::isInstance, "the first Synced");

                relay.dropConnections();

                int resync = watcher.await(firstSync + 1, SandboxEvent.Synced.class::isInstance, "a resync");
                assertThat(watcher.events().subList(firstSync + 1, resync))
                        .as("the resync delivers a snapshot of every sandbox before Synced")
                        .anyMatch(snapshot(ref, SandboxState.RUNNING, 1));
                driver.stop(ref, OptionalLong.of(1));
                watcher.await(resync, snapshot(ref, SandboxState.STOPPED, 1), "a change after the reconnect");
            }
        }
    }

    // ---- availability

    @Test
    void theProviderReportsTheEngineItFound() {
        Availability availability = provider().availability(config());

        assertThat(availability.available()).as(availability.reason()).isTrue();
        assertThat(availability.reason()).contains(engine().host());
    }

    @Test
    void theProviderExplainsWhyNoEngineIsAvailable() {
        String missing = "unix:///run/sandgate-test-" + gatewayId + "/absent.sock";
        DriverSettings config = DriverSettings.EMPTY.with(provider().name() + ".host", missing);

        Availability availability = provider().availability(config);

        assertThat(availability.available()).isFalse();
        assertThat(availability.reason()).contains(missing).contains(provider().name() + ".host");
        DriverException refused =
                assertCode(DriverErrorCode.UNAVAILABLE, () -> provider().create(config, DriverContext.of(gatewayId)));
        assertThat(refused.getMessage()).contains(missing);
    }

    // ---- helpers

    protected SandboxRef newRef(String label) {
        return new SandboxRef(
                Identifiers.newSandboxId(),
                "engine-test",
                label + "-" + UUID.randomUUID().toString().substring(0, 6));
    }

    protected SandboxSpec spec(List<String> command) {
        return spec(engine().image(), command);
    }

    protected static SandboxSpec spec(String image, List<String> command) {
        return new SandboxSpec(image, command, List.of(), Map.of(), Map.of(), ResourceRequests.NONE);
    }

    protected static LaunchInput launch(long generation, StaticPolicy policy) {
        return new LaunchInput(generation, LaunchPolicies.of(generation, policy, DynamicPolicy.EMPTY));
    }

    /** Creates a sandbox at generation 1 and waits until it runs. */
    protected SandboxRef createRunning(SandboxSpec spec, StaticPolicy policy) {
        SandboxRef ref = newRef("sandbox");
        created.add(ref);
        driver.create(ref, spec, launch(1, policy));
        await(ref + " RUNNING")
                .atMost(TIMEOUT)
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> driver.get(ref).state(), state -> state == SandboxState.RUNNING);
        return ref;
    }

    protected String onlyContainer(SandboxRef ref) {
        List<BackendResource> resources = probe.resources(ref.id());
        assertThat(resources).as("containers of %s", ref).hasSize(1);
        return resources.get(0).backendId();
    }

    protected InspectContainerResponse inspect(String containerId) {
        return probe.client().inspectContainerCmd(containerId).exec();
    }

    protected ComputeDriver extraDriver(DriverSettings config) {
        ComputeDriver extra = provider().create(config, DriverContext.of(gatewayId));
        extraDrivers.add(extra);
        return extra;
    }

    protected static DriverException assertCode(DriverErrorCode code, Runnable call) {
        DriverException refused = catchThrowableOfType(DriverException.class, call::run);
        assertThat(refused).as("expected a DriverException with %s", code).isNotNull();
        assertThat(refused.code()).as(refused.getMessage()).isEqualTo(code);
        return refused;
    }

    protected static Predicate<SandboxEvent> snapshot(SandboxRef ref, SandboxState state, long generation) {
        return event -> event instanceof SandboxEvent.Snapshot snapshot
                && snapshot.observation().ref().equals(ref)
                && snapshot.observation().state() == state
                && snapshot.observation().generation() == generation;
    }

    protected record Watching(WatchSubscription subscription, RecordingWatcher watcher) implements AutoCloseable {
        @Override
        public void close() {
            subscription.close();
        }
    }

    protected static Watching watch(ComputeDriver on) {
        var watcher = new RecordingWatcher(TIMEOUT);
        return new Watching(on.watch(watcher), watcher);
    }
}
