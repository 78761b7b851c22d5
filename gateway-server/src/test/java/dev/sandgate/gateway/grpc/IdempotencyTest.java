package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static dev.sandgate.gateway.testing.TestGateway.byName;
import static dev.sandgate.gateway.testing.TestGateway.newRequestId;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.GetOperationRequest;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.Operation;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopOutcome;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.StopSandboxResponse;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.StartedGateway;
import dev.sandgate.gateway.testing.TestGateway;
import io.grpc.Status;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/** Requests with a request_id: replays, reuse, coalescing, lookup and retention. */
@ParameterizedClass
@EnumSource(TestGateway.Transport.class)
class IdempotencyTest {
    @Parameter
    TestGateway.Transport transport;

    @StartedGateway
    TestGateway gateway;

    private StopSandboxRequest stop(String requestId, String workspace, String name) {
        return StopSandboxRequest.newBuilder()
                .setRequestId(requestId)
                .setTarget(byName(workspace, name))
                .build();
    }

    @Test
    @DisplayName("a retry with the same request_id returns the original result, marked replayed, without a driver call")
    void retryReplaysOriginalResult() {
        gateway.create("team", "agent");
        String requestId = newRequestId();

        StopSandboxResponse first = gateway.stub().stopSandbox(stop(requestId, "team", "agent"));
        StopSandboxResponse retry = gateway.stub().stopSandbox(stop(requestId, "team", "agent"));

        assertThat(first.getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
        assertThat(first.getReplayed()).isFalse();
        assertThat(retry.getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
        assertThat(retry.getReplayed()).isTrue();
        assertThat(retry.getGeneration()).isEqualTo(first.getGeneration());
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isEqualTo(1);
    }

    @Test
    @DisplayName("a replayed stop after delete and same-name recreate never touches the new sandbox")
    void replayAfterRecreateDoesNotResolveTheNameAgain() {
        Sandbox first = gateway.create("team", "agent");
        String requestId = newRequestId();
        gateway.stub().stopSandbox(stop(requestId, "team", "agent"));
        gateway.stub()
                .deleteSandbox(DeleteSandboxRequest.newBuilder()
                        .setTarget(byId(first.getId()))
                        .build());
        Sandbox second = gateway.create("team", "agent");

        StopSandboxResponse replay = gateway.stub().stopSandbox(stop(requestId, "team", "agent"));

        assertThat(replay.getReplayed()).isTrue();
        assertThat(replay.getSandbox().getId())
                .as("the original answer shows the sandbox it stopped, never the new one")
                .isEqualTo(first.getId());
        assertThat(gateway.stub()
                        .getSandbox(GetSandboxRequest.newBuilder()
                                .setTarget(byId(second.getId()))
                                .build())
                        .getSandbox()
                        .getPhase())
                .isEqualTo(Phase.READY);
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isEqualTo(1);
    }

    @Test
    @DisplayName("a request that failed is replayed with the same failure, even after the name comes to exist")
    void failureIsReplayed() {
        String requestId = newRequestId();
        GrpcErrors.Failure first = failure(() -> gateway.stub().stopSandbox(stop(requestId, "team", "agent")));
        gateway.create("team", "agent");

        GrpcErrors.Failure retry = failure(() -> gateway.stub().stopSandbox(stop(requestId, "team", "agent")));

        assertThat(first.reason()).isEqualTo("SANDBOX_NOT_FOUND");
        assertThat(retry.reason()).isEqualTo("SANDBOX_NOT_FOUND");
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isZero();
    }

    @Test
    @DisplayName("the same request_id with another payload is REQUEST_ID_REUSED")
    void reuseWithAnotherPayload() {
        gateway.create("team", "agent");
        gateway.create("team", "other");
        String requestId = newRequestId();
        gateway.stub().stopSandbox(stop(requestId, "team", "agent"));

        GrpcErrors.Failure otherTarget = failure(() -> gateway.stub().stopSandbox(stop(requestId, "team", "other")));
        GrpcErrors.Failure otherMethod = failure(() -> gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setRequestId(requestId)
                        .setTarget(byName("team", "agent"))
                        .build()));

        assertThat(otherTarget.code()).isEqualTo(Status.Code.ALREADY_EXISTS);
        assertThat(otherTarget.reason()).isEqualTo("REQUEST_ID_REUSED");
        assertThat(otherMethod.reason()).isEqualTo("REQUEST_ID_REUSED");
    }

    @Test
    @DisplayName("concurrent duplicates of one request coalesce into one driver call")
    void concurrentDuplicatesCoalesce() throws Exception {
        gateway.create("team", "agent");
        CountDownLatch stopEntered = new CountDownLatch(1);
        CountDownLatch releaseStop = new CountDownLatch(1);
        gateway.driver().beforeEach(FakeDriver.Method.STOP, ref -> {
            stopEntered.countDown();
            ConditionalStopTest.await(releaseStop);
        });
        String requestId = newRequestId();
        CompletableFuture<StopSandboxResponse> first =
                CompletableFuture.supplyAsync(() -> gateway.stub().stopSandbox(stop(requestId, "team", "agent")));
        assertThat(stopEntered.await(30, TimeUnit.SECONDS)).isTrue();
        List<CompletableFuture<StopSandboxResponse>> duplicates = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            duplicates.add(
                    CompletableFuture.supplyAsync(() -> gateway.stub().stopSandbox(stop(requestId, "team", "agent"))));
        }

        releaseStop.countDown();

        assertThat(first.get(30, TimeUnit.SECONDS).getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
        for (CompletableFuture<StopSandboxResponse> duplicate : duplicates) {
            StopSandboxResponse response = duplicate.get(30, TimeUnit.SECONDS);
            assertThat(response.getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
            assertThat(response.getReplayed()).isTrue();
        }
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isEqualTo(1);
    }

    @Test
    @DisplayName("GetOperation returns an earlier request's result by its request_id")
    void operationLookup() {
        String requestId = newRequestId();
        CreateSandboxResponse created = gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "agent")
                        .setRequestId(requestId)
                        .build());

        Operation operation = gateway.stub()
                .getOperation(
                        GetOperationRequest.newBuilder().setRequestId(requestId).build());

        assertThat(operation.getDone()).isTrue();
        assertThat(operation.getMethod()).isEqualTo("CreateSandbox");
        assertThat(operation.getSandboxId()).isEqualTo(created.getSandbox().getId());
        assertThat(operation.getGeneration()).isEqualTo(1);
        assertThat(operation.getCreate().getSandbox().getId())
                .isEqualTo(created.getSandbox().getId());
    }

    @Test
    @DisplayName("GetOperation of a failed request returns its error")
    void operationLookupOfFailure() {
        String requestId = newRequestId();
        failure(() -> gateway.stub().stopSandbox(stop(requestId, "team", "absent")));

        Operation operation = gateway.stub()
                .getOperation(
                        GetOperationRequest.newBuilder().setRequestId(requestId).build());

        assertThat(operation.getDone()).isTrue();
        assertThat(operation.getError().getCode()).isEqualTo(Status.Code.NOT_FOUND.value());
    }

    @Test
    @DisplayName("records are pruned after the retention period; then the request id is unknown")
    void recordsArePruned() {
        String requestId = newRequestId();
        gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "agent")
                        .setRequestId(requestId)
                        .build());

        int pruned = gateway.gateway().lifecycle().pruneRequests(Instant.now().plusSeconds(1));

        assertThat(pruned).isEqualTo(1);
        GrpcErrors.Failure failure = failure(() -> gateway.stub()
                .getOperation(
                        GetOperationRequest.newBuilder().setRequestId(requestId).build()));
        assertThat(failure.reason()).isEqualTo("OPERATION_NOT_FOUND");
    }

    @Test
    @DisplayName("more records than one pruning batch (100) are all pruned, and none that is younger")
    void pruningGoesOnPastOneBatch() throws InterruptedException {
        List<String> old = new ArrayList<>();
        for (int i = 0; i < 250; i++) {
            String requestId = newRequestId();
            failure(() -> gateway.stub().stopSandbox(stop(requestId, "team", "absent"))); // recorded as NOT_FOUND
            old.add(requestId);
        }
        Thread.sleep(2);
        Instant cutoff = Instant.now();
        Thread.sleep(2);
        String young = newRequestId();
        gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "agent")
                        .setRequestId(young)
                        .build());

        int pruned = gateway.gateway().lifecycle().pruneRequests(cutoff);

        assertThat(pruned).isEqualTo(250);
        for (String requestId : old) {
            assertThat(failure(() -> gateway.stub()
                                    .getOperation(GetOperationRequest.newBuilder()
                                            .setRequestId(requestId)
                                            .build()))
                            .reason())
                    .isEqualTo("OPERATION_NOT_FOUND");
        }
        assertThat(gateway.stub()
                        .getOperation(GetOperationRequest.newBuilder()
                                .setRequestId(young)
                                .build())
                        .getDone())
                .isTrue();
    }

    @Test
    @DisplayName("a malformed request_id is INVALID_ARGUMENT and nothing is written")
    void malformedRequestId() {
        GrpcErrors.Failure failure = failure(() -> gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "agent")
                        .setRequestId("not-a-uuid")
                        .build()));

        assertThat(failure.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(failure.field()).contains("request_id");
        assertThat(gateway.stub()
                        .listSandboxes(ListSandboxesRequest.getDefaultInstance())
                        .getSandboxesCount())
                .isZero();
        assertThat(gateway.driver().calls(FakeDriver.Method.CREATE)).isZero();
    }

    @Test
    @DisplayName("bad input is not recorded: the request id can then be used with a valid request")
    void invalidInputIsNotRecorded() {
        String requestId = newRequestId();
        failure(() -> gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "Not_A_Label")
                        .setRequestId(requestId)
                        .build()));

        CreateSandboxResponse created = gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "agent")
                        .setRequestId(requestId)
                        .build());

        assertThat(created.getReplayed()).isFalse();
    }

    @Test
    @DisplayName("a replayed create returns the sandbox it created")
    void createReplay() {
        String requestId = newRequestId();
        CreateSandboxResponse first = gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "agent")
                        .setRequestId(requestId)
                        .build());

        CreateSandboxResponse retry = gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "agent")
                        .setRequestId(requestId)
                        .build());

        assertThat(retry.getReplayed()).isTrue();
        assertThat(retry.getSandbox().getId()).isEqualTo(first.getSandbox().getId());
        assertThat(gateway.driver().calls(FakeDriver.Method.CREATE)).isEqualTo(1);
    }
}
