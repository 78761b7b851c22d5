package dev.sandgate.driver.vm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.conformance.LaunchPolicies;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.StaticPolicy;
import dev.sandgate.spi.StreamKind;
import dev.sandgate.spi.WatchSubscription;
import dev.sandgate.testing.EngineTest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the guest of a real VM sees and does, beyond the conformance kit: the committed launch input, the policy's
 * VM settings, boot progress on the watch, the workload's exit, exact bytes through the guest agent. Boots three VMs: the read-only checks share one.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@EngineTest
class VmGuestTest {
    private static final Duration TIMEOUT = Duration.ofMinutes(2);
    private static final StaticPolicy LIMITED =
            new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, 160L << 20, 2000, 0);

    @TempDir
    static Path stateDirectory;

    private ComputeDriver driver;
    private VmBackendProbe probe;
    private final List<SandboxEvent> events = new CopyOnWriteArrayList<>();
    private WatchSubscription watch;
    private SandboxRef shared;
    private LaunchInput sharedLaunch;

    @BeforeAll
    void bootTheSharedVm() {
        DriverSettings config = VmTestImage.config(stateDirectory);
        VmTestImage.requireAvailable(config);
        driver = new VmDriverProvider().create(config, DriverContext.of("vm-guest-test"));
        probe = new VmBackendProbe(VmSettings.from(config));
        watch = driver.watch(new SandboxWatcher() {
            @Override
            public void onEvent(SandboxEvent event) {
                events.add(event);
            }

            @Override
            public void onError(DriverException error) {
                events.add(new SandboxEvent.Platform(shared, 0, "test.watch-failed", error.getMessage()));
            }
        });
        shared = newRef("shared");
        sharedLaunch = new LaunchInput(1, LaunchPolicies.of(1, LIMITED, DynamicPolicy.EMPTY));
        driver.create(shared, SandboxSpec.ofImage(VmTestImage.IMAGE), sharedLaunch);
        await(shared, observation -> observation.state() == SandboxState.RUNNING, "RUNNING");
    }

    @AfterAll
    void deleteEverything() {
        if (watch != null) {
            watch.close();
        }
        if (driver != null) {
            driver.list().forEach(observation -> driver.delete(observation.ref(), OptionalLong.empty()));
            driver.close();
        }
        if (probe != null) {
            probe.close();
        }
    }

    @Test
    void theGuestReceivesTheCommittedPolicyDocumentAndItsDigest() {
        List<String> document = probe.console(shared, "cat /run/sandgate/policy.json; echo");
        List<String> commandLine = probe.console(shared, "cat /proc/cmdline");

        assertThat(String.join("\n", document)).isEqualTo(sharedLaunch.policy().canonicalText());
        assertThat(commandLine)
                .singleElement()
                .asString()
                .contains(
                        "sandgate.generation=1",
                        "sandgate.policy-digest=" + sharedLaunch.policy().digest());
    }

    @Test
    void theMemoryLimitIsTheGuestsMemory() {
        String memTotal = probe.console(shared, "sed -n 's/^MemTotal: *\\([0-9]*\\) kB$/\\1/p' /proc/meminfo")
                .getFirst();

        // The kernel keeps part of the 160 MiB for itself; the default 256 MiB would show about 205 MiB here.
        assertThat(Long.parseLong(memTotal)).isBetween(96L * 1024, 160L * 1024);
    }

    @Test
    void theCpuLimitIsTheNumberOfVcpus() {
        assertThat(probe.console(shared, "grep -c ^processor /proc/cpuinfo")).containsExactly("2");
    }

    @Test
    void theProbeReadsTheLimitsFromTheRunningQemuProcess() {
        assertThat(probe.appliedPolicy(shared).staticPolicy())
                .isEqualTo(new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, 160L << 20, 2000, 0));
    }

    @Test
    void networkNoneLeavesTheGuestOnlyLoopback() {
        assertThat(probe.console(shared, "ls -1 /sys/class/net")).containsExactly("lo");
    }

    @Test
    void bootProgressIsWatchedBeforeTheRunningSnapshot() {
        int running = indexOf(event -> event instanceof SandboxEvent.Snapshot snapshot
                && snapshot.observation().ref().equals(shared)
                && snapshot.observation().state() == SandboxState.RUNNING);
        int ready = indexOf(event -> event instanceof SandboxEvent.Platform platform
                && platform.ref().equals(shared)
                && platform.generation() == 1
                && platform.type().equals("vm.ready"));
        int workspace = indexOf(event -> event instanceof SandboxEvent.Platform platform
                && platform.ref().equals(shared)
                && platform.type().equals("vm.stage")
                && platform.message().equals("workspace-mounted"));

        assertThat(workspace).isNotNegative().isLessThan(ready);
        assertThat(ready).isLessThan(running);
    }

    @Test
    void networkDefaultGivesTheGuestANetworkThatReachesNothing() throws IOException, InterruptedException {
        var policy = new StaticPolicy(false, NetworkMode.DEFAULT, Set.of(), false, 0, 0, 0);
        SandboxRef ref = newRef("user-network");
        driver.create(
                ref,
                SandboxSpec.ofImage(VmTestImage.IMAGE),
                new LaunchInput(1, LaunchPolicies.of(1, policy, DynamicPolicy.EMPTY)));
        await(ref, observation -> observation.state() == SandboxState.RUNNING, "RUNNING");
        var connected = new AtomicBoolean();
        try (var server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            // Accepts and hangs up at once, so that a guest that does get through sees a clean end of its connection.
            Thread acceptor = Thread.ofVirtual().start(() -> {
                try (Socket accepted = server.accept()) {
                    connected.set(true);
                } catch (IOException closed) {
                    // the server was closed: nothing connected
                }
            });

            // Without restrict=on, 10.0.2.2 would reach this host's loopback, where the server listens.
            List<String> output = probe.console(
                    ref,
                    "ls -1 /sys/class/net; nc -w 3 10.0.2.2 " + server.getLocalPort() + " </dev/null; echo status=$?");
            server.close();
            acceptor.join();

            assertThat(output).contains("eth0", "lo").doesNotContain("status=0");
            assertThat(connected).as("the guest reached the host's loopback").isFalse();
        } finally {
            driver.delete(ref, OptionalLong.empty());
        }
    }

    @Test
    void theWorkloadRunsWithItsEnvironmentAndItsExitStatusIsReported() {
        SandboxRef ref = newRef("exits");
        var spec = new SandboxSpec(
                VmTestImage.IMAGE,
                List.of("sh", "-c"),
                List.of("echo \"exiting with $CODE\"; exit \"$CODE\""),
                Map.of("CODE", "3"),
                Map.of(),
                ResourceRequests.NONE);
        driver.create(ref, spec, new LaunchInput(1, LaunchPolicies.of(1, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY)));

        SandboxObservation failed = await(ref, observation -> observation.state() == SandboxState.FAILED, "FAILED");

        assertThat(failed.detail()).isEqualTo("the workload exited with status 3");
        var logs = new Collected();
        driver.logs(ref, 1, new LogQuery(false, Optional.empty()), logs);
        logs.awaitEnd();
        assertThat(logs.end()).isEqualTo("completed");
        assertThat(new String(logs.bytes(StreamKind.STDOUT), StandardCharsets.UTF_8))
                .as("the ended workload's output, kept until the next start")
                .isEqualTo("exiting with 3\n");
        assertThat(probe.resources(ref.id()))
                .singleElement()
                .satisfies(resource ->
                        assertThat(resource.running()).as("the VM powered off").isFalse());
        driver.delete(ref, OptionalLong.empty());
    }

    @Test
    void execCarriesEveryByteOfStandardInputAndKeepsTheStreamsApart() {
        byte[] input = new byte[10_000]; // several frames: the agent moves at most 3 KiB per frame
        for (int i = 0; i < input.length; i++) {
            input[i] = (byte) (i * 7);
        }
        var command = new ExecCommand(
                List.of("sh", "-c", "cat; echo done >&2"), Map.of(), Optional.empty(), false, true, Optional.empty());
        var collected = new Collected();
        ExecProcess process = driver.exec(shared, 1, command, collected);
        try (process) {
            process.writeStdin(input);
            process.closeStdin();
            collected.awaitEnd();
        }

        assertThat(collected.end()).isEqualTo("exited 0");
        assertThat(collected.bytes(StreamKind.STDOUT)).isEqualTo(input);
        assertThat(new String(collected.bytes(StreamKind.STDERR), StandardCharsets.UTF_8))
                .isEqualTo("done\n");
    }

    /** Collects the output and the end of one exec or logs read. */
    private static final class Collected implements ExecListener, LogListener {
        private final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        private final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        private String end;

        @Override
        public synchronized void output(StreamKind stream, byte[] data) {
            (stream == StreamKind.STDOUT ? stdout : stderr).writeBytes(data);
        }

        @Override
        public synchronized void exited(int code) {
            end = "exited " + code;
        }

        @Override
        public synchronized void completed() {
            end = "completed";
        }

        @Override
        public synchronized void failed(DriverException error) {
            end = "failed " + error.code() + ": " + error.getMessage();
        }

        synchronized String end() {
            return end;
        }

        synchronized byte[] bytes(StreamKind stream) {
            return (stream == StreamKind.STDOUT ? stdout : stderr).toByteArray();
        }

        void awaitEnd() {
            Awaitility.await("the end").atMost(TIMEOUT).until(() -> end() != null);
        }
    }

    private int indexOf(Predicate<SandboxEvent> matches) {
        List<SandboxEvent> seen = List.copyOf(events);
        for (int i = 0; i < seen.size(); i++) {
            if (matches.test(seen.get(i))) {
                return i;
            }
        }
        return -1;
    }

    private static SandboxRef newRef(String name) {
        return new SandboxRef(Identifiers.newSandboxId(), "guest-test", name);
    }

    private SandboxObservation await(SandboxRef ref, Predicate<SandboxObservation> condition, String what) {
        return Awaitility.await(ref + " " + what)
                .atMost(TIMEOUT)
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(50))
                .until(() -> driver.get(ref), condition);
    }
}
