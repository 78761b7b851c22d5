package dev.sandgate.driver.podman;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.ExecutionPrecondition;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.PolicyInput;
import dev.sandgate.api.v1.PolicyMode;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.SandboxSpec;
import dev.sandgate.api.v1.SandboxTarget;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopOutcome;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyRequest;
import dev.sandgate.conformance.BackendResource;
import dev.sandgate.driver.container.testing.DockerJavaBackendProbe;
import dev.sandgate.driver.container.testing.TestEngine;
import dev.sandgate.gateway.lifecycle.FaultInjector;
import dev.sandgate.gateway.lifecycle.FaultPoint;
import dev.sandgate.gateway.server.GatewayMain;
import dev.sandgate.spi.Labels;
import dev.sandgate.testing.EngineTest;
import dev.sandgate.testing.GatewayProcess;
import dev.sandgate.testing.ProcessTest;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The seed workflows through the real gateway, over the Podman driver and real Podman containers: a controller's stop
 * bound to an old execution is refused after a restart and after a delete and re-create of the same name, while the
 * new container keeps running; and a narrowed policy takes effect at the next start, also when the gateway halts in
 * the middle of that start and another gateway process resumes it with the input the first one committed.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ProcessTest
@EngineTest
class PodmanGatewayEndToEndTest {
    private static final String WORKSPACE = "e2e";
    private static final String READ_ONLY_POLICY =
            "{\"version\":1,\"static\":{\"network_mode\":\"none\",\"read_only_root_filesystem\":true}}";

    @TempDir
    Path root;

    private final String gatewayId = "e2e-" + UUID.randomUUID().toString().substring(0, 8);
    private final TestEngine engine = PodmanTestEngine.ENGINE;
    private final List<GatewayProcess> processes = new ArrayList<>();
    private DockerJavaBackendProbe probe;
    private GatewayProcess gateway;

    @BeforeAll
    void podmanIsThere() {
        engine.requireAvailable();
        probe = new DockerJavaBackendProbe(engine);
    }

    @AfterEach
    void stopGatewaysAndRemoveTheirContainers() {
        processes.forEach(GatewayProcess::close);
        processes.clear();
        for (BackendResource resource : probe.resourcesOfGateway(gatewayId)) {
            probe.remove(resource.stamp(Labels.SANDBOX_ID));
        }
    }

    @AfterAll
    void closeProbe() {
        if (probe != null) {
            probe.close();
        }
    }

    private GatewayProcess startGateway(String name, FaultPoint... fault) throws Exception {
        List<String> arguments = new ArrayList<>(List.of(
                "--data-dir",
                root.resolve("data").toString(),
                "--driver",
                PodmanDriverProvider.NAME,
                "--driver-property",
                "podman.host=" + engine.host(),
                "--gateway-id",
                gatewayId));
        for (FaultPoint point : fault) {
            arguments.addAll(List.of("--enable-test-faults", "--fault-point", point.externalName()));
        }
        GatewayProcess started = GatewayProcess.start(
                root,
                name,
                // This test's class path: the Podman driver, and none of the gateway's own test drivers.
                System.getProperty("java.class.path"),
                GatewayMain.class.getName(),
                arguments);
        processes.add(started);
        return started;
    }

    @Test
    void aStopBoundToTheExecutionBeforeARestartIsRefusedAndTheNewContainerKeepsRunning() throws Exception {
        gateway = startGateway("gateway");
        Sandbox created = create(uniqueName("restarted"));
        String firstToken = created.getCurrentExecution().getExecutionToken();
        stop(target(created), firstToken);
        Sandbox restarted = start(target(created));
        assertThat(restarted.getCurrentExecution().getGeneration()).isEqualTo(2);

        Refusal refusal = refusal(() -> stop(target(created), firstToken));

        assertThat(refusal.code()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(refusal.reason()).isEqualTo("STALE_EXECUTION");
        assertOneRunningContainer(created.getId(), 2);
    }

    @Test
    void aStopBoundToADeletedSandboxIsRefusedForTheNewSandboxOfTheSameName() throws Exception {
        gateway = startGateway("gateway");
        String name = uniqueName("reused");
        Sandbox first = create(name);
        String firstToken = first.getCurrentExecution().getExecutionToken();
        gateway.stub()
                .deleteSandbox(DeleteSandboxRequest.newBuilder()
                        .setRequestId(requestId())
                        .setTarget(target(first))
                        .build());
        Sandbox second = create(name);
        assertThat(second.getId()).isNotEqualTo(first.getId());

        SandboxTarget byName =
                SandboxTarget.newBuilder().setWorkspace(WORKSPACE).setName(name).build();
        Refusal refusal = refusal(() -> stop(byName, firstToken));

        assertThat(refusal.code()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(refusal.reason()).isEqualTo("STALE_EXECUTION");
        assertThat(probe.resources(first.getId())).isEmpty();
        assertOneRunningContainer(second.getId(), 1);
    }

    @Test
    void aNarrowedPolicyAppliesAtTheNextStartEvenWhenAnotherGatewayProcessResumesIt() throws Exception {
        gateway = startGateway("gateway");
        Sandbox created = create(uniqueName("narrowed"));
        assertThat(probe.exec(probe.runningContainer(ref(created)), "touch", "/before")
                        .exitCode())
                .isZero();
        stop(target(created), created.getCurrentExecution().getExecutionToken());
        String admittedDigest = gateway.stub()
                .updateSandboxPolicy(UpdateSandboxPolicyRequest.newBuilder()
                        .setRequestId(requestId())
                        .setTarget(target(created))
                        .setDocument(READ_ONLY_POLICY)
                        .build())
                .getAdmitted()
                .getDigest();
        gateway.close();

        GatewayProcess halting = startGateway("halting", FaultPoint.START_AFTER_INTENT);
        Refusal lost = refusal(() -> halting.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setRequestId(requestId())
                        .setTarget(target(created))
                        .build()));
        assertThat(lost.code()).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(halting.awaitExit()).isEqualTo(FaultInjector.HALT_STATUS);
        assertThat(probe.resources(created.getId()))
                .as("the halted gateway committed the start but never called the driver")
                .singleElement()
                .satisfies(resource ->
                        assertThat(resource.stamp(Labels.GENERATION)).isEqualTo("1"));

        gateway = startGateway("resuming");
        Sandbox resumed = awaitReadyAt(created.getId(), 2);

        assertThat(resumed.getLaunchInput().getPolicyDigest()).isEqualTo(admittedDigest);
        String containerId = assertOneRunningContainer(created.getId(), 2);
        assertThat(probe.resources(created.getId()).get(0).stamp(Labels.POLICY_DIGEST))
                .isEqualTo(admittedDigest);
        assertThat(probe.client()
                        .inspectContainerCmd(containerId)
                        .exec()
                        .getHostConfig()
                        .getReadonlyRootfs())
                .isTrue();
        assertThat(probe.exec(containerId, "touch", "/after").exitCode())
                .as("a write outside the workspace fails under the narrowed policy")
                .isNotZero();
        assertThat(probe.exec(containerId, "touch", "/workspace/after").exitCode())
                .isZero();
    }

    // ---- helpers

    /** Creates {@code name} in LIVE mode with the default policy (network none) and waits until it is READY. */
    private Sandbox create(String name) {
        CreateSandboxRequest request = CreateSandboxRequest.newBuilder()
                .setRequestId(requestId())
                .setWorkspace(WORKSPACE)
                .setName(name)
                .setSpec(SandboxSpec.newBuilder().setImage(engine.image()).addAllCommand(TestEngine.SLEEP_FOREVER))
                .setPolicy(PolicyInput.newBuilder().setMode(PolicyMode.LIVE))
                .setWaitUntilReady(true)
                .build();
        Sandbox sandbox = gateway.stub().createSandbox(request).getSandbox();
        assertThat(sandbox.getPhase()).isEqualTo(Phase.READY);
        return sandbox;
    }

    private void stop(SandboxTarget target, String token) {
        var response = gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setRequestId(requestId())
                        .setTarget(target)
                        .setPrecondition(ExecutionPrecondition.newBuilder().setExpectedExecutionToken(token))
                        .build());
        assertThat(response.getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
    }

    private Sandbox start(SandboxTarget target) {
        return gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setRequestId(requestId())
                        .setTarget(target)
                        .setWaitUntilReady(true)
                        .build())
                .getSandbox();
    }

    private Sandbox awaitReadyAt(String id, long generation) {
        return await("sandbox " + id + " READY at generation " + generation)
                .atMost(Duration.ofMinutes(2))
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(100))
                .until(
                        () -> gateway.stub()
                                .getSandbox(GetSandboxRequest.newBuilder()
                                        .setTarget(SandboxTarget.newBuilder().setId(id))
                                        .build())
                                .getSandbox(),
                        sandbox -> sandbox.getPhase() == Phase.READY
                                && sandbox.getCurrentExecution().getGeneration() == generation);
    }

    /** Exactly one container carries the sandbox id; it runs at {@code generation}. Returns its id. */
    private String assertOneRunningContainer(String sandboxId, long generation) {
        List<BackendResource> containers = probe.resources(sandboxId);
        assertThat(containers).as("containers of sandbox %s", sandboxId).hasSize(1);
        assertThat(containers.get(0).running()).isTrue();
        assertThat(containers.get(0).stamp(Labels.GENERATION)).isEqualTo(Long.toString(generation));
        return containers.get(0).backendId();
    }

    private static SandboxTarget target(Sandbox sandbox) {
        return SandboxTarget.newBuilder().setId(sandbox.getId()).build();
    }

    private static dev.sandgate.spi.SandboxRef ref(Sandbox sandbox) {
        return new dev.sandgate.spi.SandboxRef(sandbox.getId(), sandbox.getWorkspace(), sandbox.getName());
    }

    private static String uniqueName(String label) {
        return label + "-" + UUID.randomUUID().toString().substring(0, 6);
    }

    private static String requestId() {
        return UUID.randomUUID().toString();
    }

    private record Refusal(Status.Code code, String reason) {}

    private static Refusal refusal(Runnable call) {
        try {
            call.run();
        } catch (StatusRuntimeException e) {
            String reason = "";
            com.google.rpc.Status status = StatusProto.fromThrowable(e);
            if (status != null) {
                for (Any detail : status.getDetailsList()) {
                    if (detail.is(ErrorInfo.class)) {
                        try {
                            reason = detail.unpack(ErrorInfo.class).getReason();
                        } catch (InvalidProtocolBufferException invalid) {
                            throw new AssertionError(invalid);
                        }
                    }
                }
            }
            return new Refusal(e.getStatus().getCode(), reason);
        }
        throw new AssertionError("expected the call to fail");
    }
}
