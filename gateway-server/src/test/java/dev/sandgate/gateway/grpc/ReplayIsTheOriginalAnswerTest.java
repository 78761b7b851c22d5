package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.testing.TestGateway.byId;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.GetOperationRequest;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.Operation;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StartSandboxResponse;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.StopSandboxResponse;
import dev.sandgate.api.v1.UpdateSandboxPolicyRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyResponse;
import dev.sandgate.gateway.testing.StartedGateway;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxState;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * A replay of a request id is the original answer, byte for byte apart from {@code replayed}, whatever happened to
 * the sandbox since; GetOperation shows that answer as it was given (not replayed); and every time in an answer is the
 * time a later read shows.
 */
class ReplayIsTheOriginalAnswerTest {
    @StartedGateway
    TestGateway gateway;

    @Test
    @DisplayName("a create's replay is its first answer, and GetSandbox shows the same times")
    void createReplayIsTheFirstAnswer() {
        CreateSandboxRequest create = TestGateway.createRequest("team", "agent")
                .setRequestId(TestGateway.newRequestId())
                .build();

        CreateSandboxResponse first = gateway.stub().createSandbox(create);
        CreateSandboxResponse replay = gateway.stub().createSandbox(create);
        Sandbox read = get(first.getSandbox().getId());

        assertThat(first.getReplayed()).isFalse();
        assertThat(replay.getReplayed()).isTrue();
        assertThat(replay.toBuilder().setReplayed(false).build().toByteArray()).isEqualTo(first.toByteArray());
        assertThat(read.getCreateTime()).isEqualTo(first.getSandbox().getCreateTime());
        assertThat(read.getUpdateTime()).isEqualTo(first.getSandbox().getUpdateTime());
        assertThat(read.getCurrentExecution()).isEqualTo(first.getSandbox().getCurrentExecution());
    }

    @Test
    @DisplayName("a start's replay is its first answer after a later start and after the sandbox is deleted")
    void startReplayIsTheFirstAnswerAfterALaterStartAndAfterDelete() {
        Sandbox sandbox = gateway.create("team", "agent");
        stopSandbox(sandbox.getId());
        StartSandboxRequest start = StartSandboxRequest.newBuilder()
                .setRequestId(TestGateway.newRequestId())
                .setTarget(byId(sandbox.getId()))
                .build();
        StartSandboxResponse first = gateway.stub().startSandbox(start);
        byte[] original = first.toByteArray();

        stopSandbox(sandbox.getId());
        gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(sandbox.getId()))
                        .build());
        StartSandboxResponse afterLaterStart = gateway.stub().startSandbox(start);
        gateway.stub()
                .deleteSandbox(DeleteSandboxRequest.newBuilder()
                        .setTarget(byId(sandbox.getId()))
                        .build());
        StartSandboxResponse afterDelete = gateway.stub().startSandbox(start);

        assertThat(first.getExecution().hasStartTime()).isTrue();
        assertThat(afterLaterStart.getReplayed()).isTrue();
        assertThat(afterLaterStart.toBuilder().setReplayed(false).build().toByteArray())
                .as("the replay after a later start")
                .isEqualTo(original);
        assertThat(afterDelete.toBuilder().setReplayed(false).build().toByteArray())
                .as("the replay after the sandbox was deleted")
                .isEqualTo(original);
    }

    @Test
    @DisplayName("GetOperation shows the original answer, not marked replayed")
    void operationShowsTheOriginalAnswer() {
        Sandbox sandbox = gateway.create("team", "agent");
        StopSandboxRequest stop = StopSandboxRequest.newBuilder()
                .setRequestId(TestGateway.newRequestId())
                .setTarget(byId(sandbox.getId()))
                .build();
        StopSandboxResponse first = gateway.stub().stopSandbox(stop);
        gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(sandbox.getId()))
                        .build());

        Operation operation = gateway.stub()
                .getOperation(GetOperationRequest.newBuilder()
                        .setRequestId(stop.getRequestId())
                        .build());

        assertThat(operation.getStop().getReplayed()).isFalse();
        assertThat(operation.getStop().toByteArray()).isEqualTo(first.toByteArray());
    }

    @Test
    @DisplayName("a policy update's replay is its first answer, revision included, after the sandbox is deleted")
    void policyUpdateReplayIsTheFirstAnswer() {
        Sandbox sandbox = gateway.create("team", "agent");
        stopSandbox(sandbox.getId());
        UpdateSandboxPolicyRequest update = UpdateSandboxPolicyRequest.newBuilder()
                .setRequestId(TestGateway.newRequestId())
                .setTarget(byId(sandbox.getId()))
                .setDocument("{\"version\":1,\"static\":{\"pids_limit\":128}}")
                .build();
        UpdateSandboxPolicyResponse first = gateway.stub().updateSandboxPolicy(update);
        gateway.stub()
                .deleteSandbox(DeleteSandboxRequest.newBuilder()
                        .setTarget(byId(sandbox.getId()))
                        .build());

        UpdateSandboxPolicyResponse replay = gateway.stub().updateSandboxPolicy(update);

        assertThat(first.getChanged()).isTrue();
        assertThat(replay.toBuilder().setReplayed(false).build().toByteArray()).isEqualTo(first.toByteArray());
    }

    @Test
    @DisplayName("a create that waited until ready replays the answer it gave after the wait")
    void waitedCreateReplaysTheAnswerAfterTheWait() throws Exception {
        gateway.driver().launchState(SandboxState.PROVISIONING);
        CreateSandboxRequest create = TestGateway.createRequest("team", "agent")
                .setRequestId(TestGateway.newRequestId())
                .setWaitUntilReady(true)
                .build();
        CompletableFuture<CreateSandboxResponse> waiting =
                CompletableFuture.supplyAsync(() -> gateway.stub().createSandbox(create));
        while (!waiting.isDone()) {
            for (SandboxObservation o : gateway.driver().list()) {
                gateway.driver()
                        .emit(new SandboxEvent.Snapshot(new SandboxObservation(
                                o.ref(), o.generation(), SandboxState.RUNNING, o.policyDigest(), Map.of(), "")));
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
        CreateSandboxResponse first = waiting.get(30, TimeUnit.SECONDS);

        CreateSandboxResponse replay = gateway.stub().createSandbox(create);

        assertThat(first.getSandbox().getPhase()).isEqualTo(Phase.READY);
        assertThat(replay.toBuilder().setReplayed(false).build().toByteArray()).isEqualTo(first.toByteArray());
    }

    private void stopSandbox(String id) {
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder().setTarget(byId(id)).build());
    }

    private Sandbox get(String id) {
        return gateway.stub()
                .getSandbox(GetSandboxRequest.newBuilder().setTarget(byId(id)).build())
                .getSandbox();
    }
}
