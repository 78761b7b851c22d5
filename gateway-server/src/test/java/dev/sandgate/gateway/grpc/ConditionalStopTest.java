package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static dev.sandgate.gateway.testing.TestGateway.byName;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.DeleteOutcome;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.ExecutionPrecondition;
import dev.sandgate.api.v1.GetSandboxRequest;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/** Seed workflow 1: a controller's stop bound to the execution it observed. */
@ParameterizedClass
@EnumSource(TestGateway.Transport.class)
class ConditionalStopTest {
    @Parameter
    TestGateway.Transport transport;

    @StartedGateway
    TestGateway gateway;

    private StopSandboxResponse stopWithToken(String workspace, String name, String token) {
        return gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byName(workspace, name))
                        .setPrecondition(ExecutionPrecondition.newBuilder().setExpectedExecutionToken(token))
                        .build());
    }

    private Sandbox get(String id) {
        return gateway.stub()
                .getSandbox(GetSandboxRequest.newBuilder().setTarget(byId(id)).build())
                .getSandbox();
    }

    @Test
    @DisplayName("a stop conditioned on the current execution's token stops it")
    void matchingTokenStops() {
        Sandbox created = gateway.create("team", "agent");

        StopSandboxResponse response =
                stopWithToken("team", "agent", created.getCurrentExecution().getExecutionToken());

        assertThat(response.getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
        assertThat(response.getSandbox().getPhase()).isEqualTo(Phase.STOPPED);
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isEqualTo(1);
    }

    @Test
    @DisplayName("a token from before a stop/start is STALE_EXECUTION and the new execution keeps running")
    void tokenFromBeforeStopStartIsStale() {
        Sandbox created = gateway.create("team", "agent");
        String observedToken = created.getCurrentExecution().getExecutionToken();
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byName("team", "agent"))
                        .build());
        gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byName("team", "agent"))
                        .build());

        GrpcErrors.Failure failure = failure(() -> stopWithToken("team", "agent", observedToken));

        assertThat(failure.code()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(failure.reason()).isEqualTo("STALE_EXECUTION");
        assertThat(failure.precondition())
                .hasValueSatisfying(
                        p -> assertThat(p.getViolations(0).getSubject()).isEqualTo("generation"));
        Sandbox now = get(created.getId());
        assertThat(now.getPhase()).isEqualTo(Phase.READY);
        assertThat(now.getCurrentExecution().getGeneration()).isEqualTo(2);
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isEqualTo(1);
    }

    @Test
    @DisplayName("a token of a deleted sandbox is STALE_EXECUTION against a new sandbox with the same name")
    void tokenOfDeletedSandboxIsStaleAfterRecreate() {
        Sandbox first = gateway.create("team", "agent");
        String observedToken = first.getCurrentExecution().getExecutionToken();
        gateway.stub()
                .deleteSandbox(DeleteSandboxRequest.newBuilder()
                        .setTarget(byId(first.getId()))
                        .build());
        Sandbox second = gateway.create("team", "agent");

        GrpcErrors.Failure failure = failure(() -> stopWithToken("team", "agent", observedToken));

        assertThat(failure.code()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(failure.reason()).isEqualTo("STALE_EXECUTION");
        assertThat(get(second.getId()).getPhase()).isEqualTo(Phase.READY);
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isZero();
    }

    @Test
    @DisplayName("a stop racing a start that replaces the observed execution is rejected, not applied")
    void stopRacingAStartIsRejected() throws Exception {
        Sandbox created = gateway.create("team", "agent");
        String observedToken = created.getCurrentExecution().getExecutionToken();
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build());
        CountDownLatch startEntered = new CountDownLatch(1);
        CountDownLatch releaseStart = new CountDownLatch(1);
        gateway.driver().beforeEach(FakeDriver.Method.START, ref -> {
            startEntered.countDown();
            await(releaseStart);
        });
        CompletableFuture<?> start = CompletableFuture.runAsync(() -> gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build()));
        assertThat(startEntered.await(30, TimeUnit.SECONDS)).isTrue();

        CompletableFuture<GrpcErrors.Failure> stop =
                CompletableFuture.supplyAsync(() -> failure(() -> stopWithToken("team", "agent", observedToken)));
        releaseStart.countDown();
        start.get(30, TimeUnit.SECONDS);

        assertThat(stop.get(30, TimeUnit.SECONDS).reason()).isEqualTo("STALE_EXECUTION");
        assertThat(get(created.getId()).getPhase()).isEqualTo(Phase.READY);
    }

    @Test
    @DisplayName("a token that does not verify is EXECUTION_TOKEN_INVALID and never an unconditional stop")
    void forgedTokenIsInvalid() {
        Sandbox created = gateway.create("team", "agent");
        String token = created.getCurrentExecution().getExecutionToken();
        String forged = token.substring(0, token.length() - 4) + (token.endsWith("AAAA") ? "BBBB" : "AAAA");

        GrpcErrors.Failure failure = failure(() -> stopWithToken("team", "agent", forged));

        assertThat(failure.code()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(failure.reason()).isEqualTo("EXECUTION_TOKEN_INVALID");
        assertThat(get(created.getId()).getPhase()).isEqualTo(Phase.READY);
    }

    @Test
    @DisplayName("a malformed token is INVALID_ARGUMENT naming the field")
    void malformedTokenIsInvalidArgument() {
        gateway.create("team", "agent");

        GrpcErrors.Failure failure = failure(() -> stopWithToken("team", "agent", "not-a-token"));

        assertThat(failure.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(failure.field()).contains("precondition.expected_execution_token");
    }

    @Test
    @DisplayName("a present but empty precondition is INVALID_ARGUMENT, never an unconditional stop")
    void emptyPreconditionIsInvalidArgument() {
        Sandbox created = gateway.create("team", "agent");

        GrpcErrors.Failure failure = failure(() -> gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .setPrecondition(ExecutionPrecondition.getDefaultInstance())
                        .build()));

        assertThat(failure.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(failure.field()).contains("precondition");
        assertThat(get(created.getId()).getPhase()).isEqualTo(Phase.READY);
    }

    @Test
    @DisplayName("an expected sandbox id of another sandbox is SANDBOX_ID_MISMATCH with expected and actual")
    void expectedIdMismatch() {
        Sandbox created = gateway.create("team", "agent");
        Sandbox other = gateway.create("team", "other");

        GrpcErrors.Failure failure = failure(() -> gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byName("team", "agent"))
                        .setPrecondition(ExecutionPrecondition.newBuilder().setExpectedSandboxId(other.getId()))
                        .build()));

        assertThat(failure.code()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(failure.reason()).isEqualTo("SANDBOX_ID_MISMATCH");
        assertThat(failure.precondition()).hasValueSatisfying(p -> {
            assertThat(p.getViolations(0).getSubject()).isEqualTo("sandbox_id");
            assertThat(p.getViolations(0).getDescription())
                    .isEqualTo("expected " + other.getId() + ", actual " + created.getId());
        });
    }

    @Test
    @DisplayName("checks run in order: syntax, then token signature, then sandbox id, then generation")
    void checksRunInOrder() {
        Sandbox created = gateway.create("team", "agent");
        Sandbox other = gateway.create("team", "other");
        String staleToken = created.getCurrentExecution().getExecutionToken();
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build());
        gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build());
        // Changes a character in the middle of the mac, where every bit counts.
        int at = staleToken.length() - 10;
        String forged =
                staleToken.substring(0, at) + (staleToken.charAt(at) == 'A' ? 'B' : 'A') + staleToken.substring(at + 1);

        GrpcErrors.Failure syntax = failure(() -> stopWith(created.getId(), other.getId(), "garbage"));
        GrpcErrors.Failure signature = failure(() -> stopWith(created.getId(), other.getId(), forged));
        GrpcErrors.Failure sandboxId = failure(() -> stopWith(created.getId(), other.getId(), staleToken));
        GrpcErrors.Failure generation = failure(() -> stopWith(created.getId(), created.getId(), staleToken));

        assertThat(syntax.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(signature.reason()).isEqualTo("EXECUTION_TOKEN_INVALID");
        assertThat(sandboxId.reason()).isEqualTo("SANDBOX_ID_MISMATCH");
        assertThat(generation.reason()).isEqualTo("STALE_EXECUTION");
    }

    private StopSandboxResponse stopWith(String targetId, String expectedId, String token) {
        return gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(targetId))
                        .setPrecondition(ExecutionPrecondition.newBuilder()
                                .setExpectedSandboxId(expectedId)
                                .setExpectedExecutionToken(token))
                        .build());
    }

    @Test
    @DisplayName("an unconditional stop still works, and a second one says already stopped")
    void unconditionalStop() {
        Sandbox created = gateway.create("team", "agent");

        StopSandboxResponse first = gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build());
        StopSandboxResponse second = gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build());

        assertThat(first.getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
        assertThat(second.getOutcome()).isEqualTo(StopOutcome.ALREADY_STOPPED);
        assertThat(second.getReplayed()).isFalse();
    }

    @Test
    @DisplayName("a token stays current while its execution is stopped")
    void tokenStaysCurrentWhileStopped() {
        Sandbox created = gateway.create("team", "agent");
        String token = created.getCurrentExecution().getExecutionToken();
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build());

        StopSandboxResponse again = stopWithToken("team", "agent", token);

        assertThat(again.getOutcome()).isEqualTo(StopOutcome.ALREADY_STOPPED);
        assertThat(get(created.getId()).getCurrentExecution().getExecutionToken())
                .isEqualTo(token);
    }

    @Test
    @DisplayName("a conditional delete with a stale token is rejected; with the current token it deletes")
    void conditionalDelete() {
        Sandbox created = gateway.create("team", "agent");
        String stale = created.getCurrentExecution().getExecutionToken();
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build());
        Sandbox restarted = gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build())
                .getSandbox();

        GrpcErrors.Failure failure = failure(() -> gateway.stub()
                .deleteSandbox(DeleteSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .setPrecondition(ExecutionPrecondition.newBuilder().setExpectedExecutionToken(stale))
                        .build()));
        var deleted = gateway.stub()
                .deleteSandbox(DeleteSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .setPrecondition(ExecutionPrecondition.newBuilder()
                                .setExpectedExecutionToken(
                                        restarted.getCurrentExecution().getExecutionToken()))
                        .build());

        assertThat(failure.reason()).isEqualTo("STALE_EXECUTION");
        assertThat(deleted.getOutcome()).isEqualTo(DeleteOutcome.DELETED_NOW);
    }

    @Test
    @DisplayName("deleting an absent sandbox is NOT_FOUND unless missing is allowed")
    void deleteAbsent() {
        String absent = "00000000-0000-4000-8000-000000000001";

        GrpcErrors.Failure failure = failure(() -> gateway.stub()
                .deleteSandbox(DeleteSandboxRequest.newBuilder()
                        .setTarget(byId(absent))
                        .build()));
        var allowed = gateway.stub()
                .deleteSandbox(DeleteSandboxRequest.newBuilder()
                        .setTarget(byId(absent))
                        .setAllowMissing(true)
                        .build());

        assertThat(failure.code()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(failure.reason()).isEqualTo("SANDBOX_NOT_FOUND");
        assertThat(allowed.getOutcome()).isEqualTo(DeleteOutcome.NOTHING_DELETED);
    }

    static void await(CountDownLatch latch) {
        try {
            if (!latch.await(30, TimeUnit.SECONDS)) {
                throw new AssertionError("latch not released");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
