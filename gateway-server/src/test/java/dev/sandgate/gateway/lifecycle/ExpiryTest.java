package dev.sandgate.gateway.lifecycle;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static dev.sandgate.gateway.testing.TestGateway.createRequest;
import static dev.sandgate.gateway.testing.TestGateway.newRequestId;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Duration;
import com.google.protobuf.Timestamp;
import dev.sandgate.api.v1.ExecutionLease;
import dev.sandgate.api.v1.ExpiryAction;
import dev.sandgate.api.v1.ExpiryPolicy;
import dev.sandgate.api.v1.GetOperationRequest;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.Operation;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.RenewSandboxLeaseRequest;
import dev.sandgate.api.v1.RenewSandboxLeaseResponse;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.store.ExpiryRecord;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.StartedGateway;
import dev.sandgate.gateway.testing.TestGateway;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Instant;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** Expiry (issue 33): leases of executions, their renewal, and the gateway acting on them through the lifecycle. */
class ExpiryTest {
    @StartedGateway
    TestGateway gateway;

    private static Duration seconds(long value) {
        return Duration.newBuilder().setSeconds(value).build();
    }

    private static long millis(Timestamp t) {
        return t.getSeconds() * 1000 + t.getNanos() / 1_000_000;
    }

    /** The milliseconds from {@code from} to {@code to}. */
    private static long between(Timestamp from, Timestamp to) {
        return millis(to) - millis(from);
    }

    private Sandbox create(String name, ExpiryPolicy expiry) {
        return gateway.stub()
                .createSandbox(createRequest("team", name).setExpiry(expiry).build())
                .getSandbox();
    }

    private Sandbox get(String id) {
        return gateway.stub()
                .getSandbox(GetSandboxRequest.newBuilder().setTarget(byId(id)).build())
                .getSandbox();
    }

    private Optional<Sandbox> find(String id) {
        try {
            return Optional.of(get(id));
        } catch (StatusRuntimeException e) {
            if (e.getStatus().getCode() == Status.Code.NOT_FOUND) {
                return Optional.empty();
            }
            throw e;
        }
    }

    private RenewSandboxLeaseResponse renew(String id, String token, String requestId) {
        RenewSandboxLeaseRequest.Builder request =
                RenewSandboxLeaseRequest.newBuilder().setTarget(byId(id)).setExecutionToken(token);
        if (requestId != null) {
            request.setRequestId(requestId);
        }
        return gateway.stub().renewSandboxLease(request.build());
    }

    private static String token(Sandbox sandbox) {
        return sandbox.getCurrentExecution().getExecutionToken();
    }

    private Lifecycle lifecycle() {
        return gateway.gateway().lifecycle();
    }

    @Test
    @DisplayName("an execution whose TTL passes is stopped, and an EXPIRED condition says why")
    void ttlStopsTheExecution() {
        Sandbox created =
                create("ttl", ExpiryPolicy.newBuilder().setTtl(seconds(1)).build());
        assertThat(created.getExpiry().getTtl()).isEqualTo(seconds(1));
        ExecutionLease lease = created.getLease();
        assertThat(lease.getGeneration()).isEqualTo(1);
        assertThat(between(created.getCurrentExecution().getStartTime(), lease.getTtlDeadline()))
                .isEqualTo(1000);
        assertThat(lease.hasIdleDeadline()).isFalse();

        await().until(() -> stoppedWithExpiredCondition(created.getId()));

        Sandbox stopped = get(created.getId());
        assertThat(stopped.getCurrentExecution().getGeneration()).isEqualTo(1);
        assertThat(stopped.getConditionsList()).anySatisfy(c -> {
            assertThat(c.getType()).isEqualTo("EXPIRED");
            assertThat(c.getMessage()).contains("generation 1").contains("ttl");
        });
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isEqualTo(1);
    }

    @Test
    @DisplayName("a start after an expiry is a new execution with a new lease, and the EXPIRED condition goes")
    void startAfterExpiryGetsANewLease() {
        Sandbox created =
                create("again", ExpiryPolicy.newBuilder().setTtl(seconds(1)).build());
        await().until(() -> get(created.getId()).getPhase() == Phase.STOPPED);

        Sandbox started = gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build())
                .getSandbox();

        assertThat(started.getLease().getGeneration()).isEqualTo(2);
        assertThat(between(
                        created.getLease().getTtlDeadline(), started.getLease().getTtlDeadline()))
                .isPositive();
        assertThat(started.getConditionsList())
                .noneSatisfy(c -> assertThat(c.getType()).isEqualTo("EXPIRED"));
        await().until(() -> get(created.getId()).getPhase() == Phase.STOPPED);
        assertThat(get(created.getId()).getCurrentExecution().getGeneration()).isEqualTo(2);
    }

    @Test
    @DisplayName("renewals keep an execution with an idle timeout alive; without them it is stopped")
    void renewalsKeepIdleExecutionAlive() {
        Sandbox created = create(
                "idle", ExpiryPolicy.newBuilder().setIdleTimeout(seconds(1)).build());
        Instant firstDeadline = Instant.ofEpochMilli(millis(created.getLease().getIdleDeadline()));

        // Renew on every poll until well past the first idle deadline: the execution must still run.
        await().pollInterval(java.time.Duration.ofMillis(200)).until(() -> {
            renew(created.getId(), token(created), null);
            return Instant.now().isAfter(firstDeadline.plusSeconds(1));
        });
        Sandbox renewed = get(created.getId());
        assertThat(renewed.getPhase()).isEqualTo(Phase.READY);
        assertThat(between(renewed.getLease().getRenewTime(), renewed.getLease().getIdleDeadline()))
                .isEqualTo(1000);
        assertThat(millis(renewed.getLease().getIdleDeadline())).isGreaterThan(firstDeadline.toEpochMilli());

        await().until(() -> stoppedWithExpiredCondition(created.getId()));
        assertThat(get(created.getId()).getConditionsList())
                .anySatisfy(c -> assertThat(c.getMessage()).contains("idle"));
    }

    @Test
    @DisplayName("a renewal moves only the idle deadline; the TTL deadline stays")
    void renewalMovesOnlyTheIdleDeadline() {
        Sandbox created = create(
                "both",
                ExpiryPolicy.newBuilder()
                        .setTtl(seconds(3600))
                        .setIdleTimeout(seconds(600))
                        .build());

        RenewSandboxLeaseResponse response = renew(created.getId(), token(created), null);

        assertThat(response.getLease().getTtlDeadline())
                .isEqualTo(created.getLease().getTtlDeadline());
        assertThat(between(
                        created.getLease().getRenewTime(), response.getLease().getRenewTime()))
                .isGreaterThanOrEqualTo(0);
        assertThat(between(
                        response.getLease().getRenewTime(), response.getLease().getIdleDeadline()))
                .isEqualTo(600_000);
        assertThat(response.getSandbox().getLease()).isEqualTo(response.getLease());
    }

    @Test
    @DisplayName("a renewal with the token of an older execution is STALE_EXECUTION; of a stopped one NOT_RUNNING")
    void renewalIsPinnedToTheRunningExecution() {
        Sandbox created = create(
                "pinned", ExpiryPolicy.newBuilder().setIdleTimeout(seconds(600)).build());
        String first = token(created);
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build());

        GrpcErrors.Failure stopped = failure(() -> renew(created.getId(), first, null));
        assertThat(stopped.code()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(stopped.reason()).isEqualTo("NOT_RUNNING");

        Sandbox started = gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build())
                .getSandbox();
        GrpcErrors.Failure stale = failure(() -> renew(created.getId(), first, null));
        assertThat(stale.code()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(stale.reason()).isEqualTo("STALE_EXECUTION");
        assertThat(get(created.getId()).getLease()).isEqualTo(started.getLease());
    }

    @Test
    @DisplayName("a renewal with a request_id replays its answer; the id with another request is REQUEST_ID_REUSED")
    void renewalIsIdempotent() {
        Sandbox created = create(
                "replay", ExpiryPolicy.newBuilder().setIdleTimeout(seconds(600)).build());
        String requestId = newRequestId();

        RenewSandboxLeaseResponse first = renew(created.getId(), token(created), requestId);
        renew(created.getId(), token(created), null);
        RenewSandboxLeaseResponse again = renew(created.getId(), token(created), requestId);

        assertThat(again.getReplayed()).isTrue();
        assertThat(again.getLease()).isEqualTo(first.getLease());
        Operation operation = gateway.stub()
                .getOperation(
                        GetOperationRequest.newBuilder().setRequestId(requestId).build());
        assertThat(operation.getMethod()).isEqualTo("RenewSandboxLease");
        assertThat(operation.getRenewLease().getLease()).isEqualTo(first.getLease());

        Sandbox other = create(
                "other", ExpiryPolicy.newBuilder().setIdleTimeout(seconds(600)).build());
        GrpcErrors.Failure reused = failure(() -> renew(other.getId(), token(other), requestId));
        assertThat(reused.reason()).isEqualTo("REQUEST_ID_REUSED");
    }

    @Test
    @DisplayName("the expiry of generation G after a start to G+1 is STALE_EXECUTION and G+1 keeps running")
    void expiryOfAnOlderExecutionNeverStopsANewerOne() {
        Sandbox created =
                create("newer", ExpiryPolicy.newBuilder().setTtl(seconds(3600)).build());
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build());
        gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build());
        int stops = gateway.driver().calls(FakeDriver.Method.STOP);

        assertThatThrownBy(() -> lifecycle().expiry().act(created.getId(), 1, "ttl", ExpiryRecord.Action.STOP))
                .isInstanceOfSatisfying(
                        GatewayException.class, e -> assertThat(e.reason()).isEqualTo(ErrorReason.STALE_EXECUTION));

        Sandbox now = get(created.getId());
        assertThat(now.getPhase()).isEqualTo(Phase.READY);
        assertThat(now.getCurrentExecution().getGeneration()).isEqualTo(2);
        assertThat(now.getLease().getGeneration()).isEqualTo(2);
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isEqualTo(stops);
    }

    @Test
    @DisplayName("an expiry repeated (as after a crash) replays its stop instead of stopping again")
    void repeatedExpiryReplays() {
        Sandbox created =
                create("twice", ExpiryPolicy.newBuilder().setTtl(seconds(3600)).build());

        MutationReply first = lifecycle().expiry().act(created.getId(), 1, "ttl", ExpiryRecord.Action.STOP);
        MutationReply second = lifecycle().expiry().act(created.getId(), 1, "ttl", ExpiryRecord.Action.STOP);

        assertThat(first.outcome()).isEqualTo(Outcome.STOPPED_NOW);
        assertThat(second.replayed()).isTrue();
        assertThat(second.outcome()).isEqualTo(Outcome.STOPPED_NOW);
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isEqualTo(1);
        assertThat(get(created.getId()).getConditionsList())
                .filteredOn(c -> c.getType().equals("EXPIRED"))
                .hasSize(1);
    }

    @Test
    @DisplayName("EXPIRE_DELETE deletes the sandbox when its lease expires")
    void expireDeleteDeletes() {
        Sandbox created = create(
                "gone",
                ExpiryPolicy.newBuilder()
                        .setTtl(seconds(1))
                        .setAction(ExpiryAction.EXPIRE_DELETE)
                        .build());
        assertThat(created.getExpiry().getAction()).isEqualTo(ExpiryAction.EXPIRE_DELETE);

        await().until(() -> find(created.getId()).isEmpty());
        assertThat(gateway.driver().calls(FakeDriver.Method.DELETE)).isEqualTo(1);
    }

    @Test
    @DisplayName("a lease due while the gateway was down is acted on after the restart")
    void leaseSurvivesARestart() {
        Sandbox created =
                create("restart", ExpiryPolicy.newBuilder().setTtl(seconds(1)).build());

        gateway.restart();

        // On PostgreSQL the closed gateway's expiry may have been acting on the sandbox, under a per-sandbox replica
        // lease that the restarted one waits out (10 s by default) before it acts.
        await().atMost(java.time.Duration.ofSeconds(30)).until(() -> stoppedWithExpiredCondition(created.getId()));
        assertThat(get(created.getId()).getConditionsList())
                .anySatisfy(c -> assertThat(c.getType()).isEqualTo("EXPIRED"));
    }

    @Test
    @DisplayName("a sandbox without an expiry policy has neither policy nor lease, and a renewal changes nothing")
    void noExpiryNoLease() {
        Sandbox created = gateway.create("team", "forever");

        assertThat(created.hasExpiry()).isFalse();
        assertThat(created.hasLease()).isFalse();
        RenewSandboxLeaseResponse response = renew(created.getId(), token(created), null);
        assertThat(response.hasLease()).isFalse();
        assertThat(response.getSandbox().getResourceVersion()).isEqualTo(created.getResourceVersion());
    }

    /** Stopped, and the EXPIRED condition recorded: the expiry writes it in one more write after the stop. */
    private boolean stoppedWithExpiredCondition(String id) {
        Sandbox sandbox = get(id);
        return sandbox.getPhase() == Phase.STOPPED
                && sandbox.getConditionsList().stream()
                        .anyMatch(c -> c.getType().equals("EXPIRED"));
    }

    private GrpcErrors.Failure createFailure(ExpiryPolicy expiry) {
        GrpcErrors.Failure f = failure(() -> create("bad", expiry));
        assertThat(find("team", "bad")).isFalse();
        return f;
    }

    private boolean find(String workspace, String name) {
        return !gateway
                .stub()
                .listSandboxes(dev.sandgate.api.v1.ListSandboxesRequest.newBuilder()
                        .setWorkspace(workspace)
                        .build())
                .getSandboxesList()
                .stream()
                .filter(s -> s.getName().equals(name))
                .toList()
                .isEmpty();
    }

    @Test
    @DisplayName("a policy with neither ttl nor idle_timeout names expiry")
    void emptyPolicy() {
        GrpcErrors.Failure f = createFailure(
                ExpiryPolicy.newBuilder().setAction(ExpiryAction.EXPIRE_DELETE).build());
        assertThat(f.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(f.field()).contains("expiry");
    }

    @Test
    @DisplayName("a ttl under one second names expiry.ttl")
    void ttlTooShort() {
        GrpcErrors.Failure f = createFailure(ExpiryPolicy.newBuilder()
                .setTtl(Duration.newBuilder().setNanos(500_000_000))
                .build());
        assertThat(f.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(f.field()).contains("expiry.ttl");
    }

    @Test
    @DisplayName("an idle timeout over 366 days names expiry.idle_timeout")
    void idleTooLong() {
        GrpcErrors.Failure f = createFailure(ExpiryPolicy.newBuilder()
                .setIdleTimeout(seconds(367L * 24 * 3600))
                .build());
        assertThat(f.field()).contains("expiry.idle_timeout");
    }

    @Test
    @DisplayName("a negative ttl names expiry.ttl")
    void negativeTtl() {
        GrpcErrors.Failure f =
                createFailure(ExpiryPolicy.newBuilder().setTtl(seconds(-5)).build());
        assertThat(f.field()).contains("expiry.ttl");
    }

    @Test
    @DisplayName("a renewal without an execution token names execution_token")
    void renewalNeedsAToken() {
        Sandbox created = gateway.create("team", "tokenless");
        GrpcErrors.Failure f = failure(() -> gateway.stub()
                .renewSandboxLease(RenewSandboxLeaseRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build()));
        assertThat(f.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(f.field()).contains("execution_token");
    }
}
