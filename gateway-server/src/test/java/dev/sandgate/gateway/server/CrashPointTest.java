package dev.sandgate.gateway.server;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static dev.sandgate.gateway.testing.TestGateway.byName;
import static dev.sandgate.gateway.testing.TestGateway.newRequestId;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.DeleteOutcome;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxResponse;
import dev.sandgate.api.v1.ExecutionPrecondition;
import dev.sandgate.api.v1.GetOperationRequest;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.Operation;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StartOutcome;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StartSandboxResponse;
import dev.sandgate.api.v1.StopOutcome;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.StopSandboxResponse;
import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.gateway.lifecycle.FaultInjector;
import dev.sandgate.gateway.lifecycle.FaultPoint;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.testing.GatewayProcess;
import dev.sandgate.testing.ProcessTest;
import dev.sandgate.testing.StoreSchema;
import io.grpc.Status;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills the gateway process at each of the eight crash points (between "intent committed" and "driver called", and
 * between "driver returned" and "result committed", for create, stop, start and delete), over the reference driver's
 * directory backend and the SQLite file, then starts a new process and checks that nothing is duplicated, orphaned
 * or lost, that tokens issued before the crash still verify, and that request_id replays return the right result.
 */
@ProcessTest
class CrashPointTest {
    private static final String GATEWAY_ID = "crash-gw";

    @TempDir
    Path root;

    private Path dataDir;
    private Path backendDir;
    private final List<GatewayProcess> processes = new ArrayList<>();

    /** On a PostgreSQL run, the store of both processes: the second is a replica taking over from the first. */
    private StoreSchema schema;

    @BeforeEach
    void directories() throws Exception {
        dataDir = root.resolve("data");
        backendDir = root.resolve("backend");
        schema = StoreSchema.forThisRun();
    }

    @AfterEach
    void stopProcesses() {
        for (GatewayProcess process : processes) {
            process.close();
        }
        StoreSchema.closeIfAny(schema);
    }

    private GatewayProcess gateway(String name, Optional<FaultPoint> fault) throws Exception {
        List<String> args = new ArrayList<>(List.of(
                "--data-dir",
                dataDir.toString(),
                "--driver",
                ReferenceDriverProvider.NAME,
                "--driver-property",
                ReferenceDriverProvider.DIRECTORY + "=" + backendDir,
                "--gateway-id",
                GATEWAY_ID));
        if (schema != null) {
            // The halted first one leaves its leases behind: the second waits out their time to live.
            args.addAll(schema.storeArgs());
            args.addAll(List.of("--replica-lease-ttl", "2s"));
        }
        fault.ifPresent(point -> args.addAll(List.of("--enable-test-faults", "--fault-point", point.externalName())));
        GatewayProcess process = GatewayProcess.start(
                root, name, System.getProperty("java.class.path"), GatewayMain.class.getName(), args);
        processes.add(process);
        return process;
    }

    /** The runtime resources as a fresh reference driver instance over the same directory sees them. */
    private List<SandboxObservation> runtime() {
        try (ComputeDriver verifier = new ReferenceDriverProvider()
                .create(
                        new DriverSettings(Map.of(ReferenceDriverProvider.DIRECTORY, backendDir.toString())),
                        DriverContext.of(GATEWAY_ID))) {
            return verifier.list();
        }
    }

    /** Halts the first gateway with the given call, and checks it died at the fault point. */
    private void crash(GatewayProcess gateway, FaultPoint point, Runnable call) throws Exception {
        GrpcErrors.Failure lost = failure(call::run);
        assertThat(lost.code()).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(gateway.awaitExit()).isEqualTo(FaultInjector.HALT_STATUS);
        assertThat(gateway.output()).contains("test fault point " + point.externalName() + " reached");
    }

    /** Every stored sandbox has exactly one runtime resource and every runtime resource has a stored sandbox. */
    private void assertNothingDuplicatedOrphanedOrLost(GatewayProcess gateway) {
        List<Sandbox> stored = gateway.stub()
                .listSandboxes(ListSandboxesRequest.getDefaultInstance())
                .getSandboxesList();
        List<SandboxObservation> runtime = runtime();
        assertThat(runtime.stream().map(o -> o.ref().id()))
                .containsExactlyInAnyOrderElementsOf(
                        stored.stream().map(Sandbox::getId).toList());
        for (Sandbox sandbox : stored) {
            SandboxObservation observed = runtime.stream()
                    .filter(o -> o.ref().id().equals(sandbox.getId()))
                    .findFirst()
                    .orElseThrow();
            assertThat(observed.generation())
                    .isEqualTo(sandbox.getCurrentExecution().getGeneration());
            assertThat(observed.policyDigest())
                    .isEqualTo(sandbox.getLaunchInput().getPolicyDigest());
        }
    }

    private static CreateSandboxRequest createRequest(String requestId) {
        return TestGateway.createRequest("team", "agent")
                .setRequestId(requestId)
                .build();
    }

    private Sandbox get(GatewayProcess gateway, String id) {
        return gateway.stub()
                .getSandbox(GetSandboxRequest.newBuilder().setTarget(byId(id)).build())
                .getSandbox();
    }

    private static StopSandboxRequest conditionalStop(String requestId, String token) {
        return StopSandboxRequest.newBuilder()
                .setRequestId(requestId)
                .setTarget(byName("team", "agent"))
                .setPrecondition(ExecutionPrecondition.newBuilder().setExpectedExecutionToken(token))
                .build();
    }

    private void createCrash(FaultPoint point) throws Exception {
        GatewayProcess first = gateway("first", Optional.of(point));
        String requestId = newRequestId();

        crash(first, point, () -> first.stub().createSandbox(createRequest(requestId)));
        List<SandboxObservation> between = runtime();
        GatewayProcess second = gateway("second", Optional.empty());
        CreateSandboxResponse replay = second.stub().createSandbox(createRequest(requestId));

        assertThat(between).hasSize(point == FaultPoint.CREATE_AFTER_INTENT ? 0 : 1);
        assertThat(replay.getReplayed()).isTrue();
        Sandbox sandbox = get(second, replay.getSandbox().getId());
        assertThat(sandbox.getCurrentExecution().getGeneration()).isEqualTo(1);
        assertThat(sandbox.getPhase()).isIn(Phase.PROVISIONING, Phase.READY);
        assertThat(second.stub()
                        .stopSandbox(conditionalStop(
                                newRequestId(), sandbox.getCurrentExecution().getExecutionToken()))
                        .getOutcome())
                .isEqualTo(StopOutcome.STOPPED_NOW);
        Operation operation = second.stub()
                .getOperation(
                        GetOperationRequest.newBuilder().setRequestId(requestId).build());
        assertThat(operation.getDone()).isTrue();
        assertThat(operation.getSandboxId()).isEqualTo(sandbox.getId());
        assertNothingDuplicatedOrphanedOrLost(second);
    }

    private void stopCrash(FaultPoint point) throws Exception {
        GatewayProcess first = gateway("first", Optional.of(point));
        Sandbox created =
                first.stub().createSandbox(createRequest(newRequestId())).getSandbox();
        String tokenBeforeCrash = created.getCurrentExecution().getExecutionToken();
        String requestId = newRequestId();

        crash(first, point, () -> first.stub().stopSandbox(conditionalStop(requestId, tokenBeforeCrash)));
        SandboxState between = runtime().getFirst().state();
        GatewayProcess second = gateway("second", Optional.empty());
        StopSandboxResponse replay = second.stub().stopSandbox(conditionalStop(requestId, tokenBeforeCrash));

        assertThat(between)
                .isEqualTo(point == FaultPoint.STOP_AFTER_INTENT ? SandboxState.RUNNING : SandboxState.STOPPED);
        assertThat(replay.getReplayed()).isTrue();
        assertThat(replay.getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
        assertThat(replay.getGeneration()).isEqualTo(1);
        assertThat(get(second, created.getId()).getPhase()).isEqualTo(Phase.STOPPED);
        StopSandboxResponse again = second.stub().stopSandbox(conditionalStop(newRequestId(), tokenBeforeCrash));
        assertThat(again.getOutcome()).isEqualTo(StopOutcome.ALREADY_STOPPED);
        assertNothingDuplicatedOrphanedOrLost(second);
    }

    private void startCrash(FaultPoint point) throws Exception {
        GatewayProcess first = gateway("first", Optional.of(point));
        Sandbox created =
                first.stub().createSandbox(createRequest(newRequestId())).getSandbox();
        String tokenBeforeCrash = created.getCurrentExecution().getExecutionToken();
        first.stub().stopSandbox(conditionalStop(newRequestId(), tokenBeforeCrash));
        StartSandboxRequest start = StartSandboxRequest.newBuilder()
                .setRequestId(newRequestId())
                .setTarget(byId(created.getId()))
                .build();

        crash(first, point, () -> first.stub().startSandbox(start));
        SandboxObservation between = runtime().getFirst();
        GatewayProcess second = gateway("second", Optional.empty());
        StartSandboxResponse replay = second.stub().startSandbox(start);

        assertThat(between.generation()).isEqualTo(point == FaultPoint.START_AFTER_INTENT ? 1 : 2);
        assertThat(replay.getReplayed()).isTrue();
        assertThat(replay.getOutcome()).isEqualTo(StartOutcome.LAUNCHED);
        assertThat(replay.getExecution().getGeneration()).isEqualTo(2);
        Sandbox sandbox = get(second, created.getId());
        assertThat(sandbox.getCurrentExecution().getGeneration()).isEqualTo(2);
        assertThat(sandbox.getLaunchInput().getGeneration()).isEqualTo(2);
        assertThat(sandbox.getPhase()).isIn(Phase.PROVISIONING, Phase.READY);
        GrpcErrors.Failure stale =
                failure(() -> second.stub().stopSandbox(conditionalStop(newRequestId(), tokenBeforeCrash)));
        assertThat(stale.reason()).isEqualTo("STALE_EXECUTION");
        assertThat(second.stub()
                        .stopSandbox(conditionalStop(
                                newRequestId(), replay.getExecution().getExecutionToken()))
                        .getOutcome())
                .isEqualTo(StopOutcome.STOPPED_NOW);
        assertNothingDuplicatedOrphanedOrLost(second);
    }

    private void deleteCrash(FaultPoint point) throws Exception {
        GatewayProcess first = gateway("first", Optional.of(point));
        Sandbox created =
                first.stub().createSandbox(createRequest(newRequestId())).getSandbox();
        String tokenBeforeCrash = created.getCurrentExecution().getExecutionToken();
        DeleteSandboxRequest delete = DeleteSandboxRequest.newBuilder()
                .setRequestId(newRequestId())
                .setTarget(byName("team", "agent"))
                .setPrecondition(ExecutionPrecondition.newBuilder().setExpectedExecutionToken(tokenBeforeCrash))
                .build();

        crash(first, point, () -> first.stub().deleteSandbox(delete));
        List<SandboxObservation> between = runtime();
        GatewayProcess second = gateway("second", Optional.empty());
        DeleteSandboxResponse replay = second.stub().deleteSandbox(delete);

        assertThat(between).hasSize(point == FaultPoint.DELETE_AFTER_INTENT ? 1 : 0);
        assertThat(replay.getReplayed()).isTrue();
        assertThat(replay.getOutcome()).isEqualTo(DeleteOutcome.DELETED_NOW);
        assertThat(replay.getSandboxId()).isEqualTo(created.getId());
        assertThat(failure(() -> get(second, created.getId())).code()).isEqualTo(Status.Code.NOT_FOUND);
        second.stub().createSandbox(createRequest(newRequestId()));
        GrpcErrors.Failure stale =
                failure(() -> second.stub().stopSandbox(conditionalStop(newRequestId(), tokenBeforeCrash)));
        assertThat(stale.reason()).isEqualTo("STALE_EXECUTION");
        assertNothingDuplicatedOrphanedOrLost(second);
    }

    @Test
    @DisplayName("create: killed after the intent is committed, before the driver is called")
    void createAfterIntent() throws Exception {
        createCrash(FaultPoint.CREATE_AFTER_INTENT);
    }

    @Test
    @DisplayName("create: killed after the driver returned, before the result is committed")
    void createAfterDriver() throws Exception {
        createCrash(FaultPoint.CREATE_AFTER_DRIVER);
    }

    @Test
    @DisplayName("stop: killed after the intent is committed, before the driver is called")
    void stopAfterIntent() throws Exception {
        stopCrash(FaultPoint.STOP_AFTER_INTENT);
    }

    @Test
    @DisplayName("stop: killed after the driver returned, before the result is committed")
    void stopAfterDriver() throws Exception {
        stopCrash(FaultPoint.STOP_AFTER_DRIVER);
    }

    @Test
    @DisplayName("start: killed after the intent is committed, before the driver is called")
    void startAfterIntent() throws Exception {
        startCrash(FaultPoint.START_AFTER_INTENT);
    }

    @Test
    @DisplayName("start: killed after the driver returned, before the result is committed")
    void startAfterDriver() throws Exception {
        startCrash(FaultPoint.START_AFTER_DRIVER);
    }

    @Test
    @DisplayName("delete: killed after the intent is committed, before the driver is called")
    void deleteAfterIntent() throws Exception {
        deleteCrash(FaultPoint.DELETE_AFTER_INTENT);
    }

    @Test
    @DisplayName("delete: killed after the driver returned, before the result is committed")
    void deleteAfterDriver() throws Exception {
        deleteCrash(FaultPoint.DELETE_AFTER_DRIVER);
    }
}
