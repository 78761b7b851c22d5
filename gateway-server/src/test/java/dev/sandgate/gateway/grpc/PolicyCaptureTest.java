package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static dev.sandgate.gateway.testing.TestGateway.newRequestId;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.GetSandboxPolicyRequest;
import dev.sandgate.api.v1.GetSandboxPolicyResponse;
import dev.sandgate.api.v1.PolicyMode;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StartSandboxResponse;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyResponse;
import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.StartedGateway;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LaunchInput;
import io.grpc.Status;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/** Seed workflows 2 and 3: one committed policy input per launch; LIVE and FROZEN. */
@ParameterizedClass
@EnumSource(TestGateway.Transport.class)
class PolicyCaptureTest {
    static final String ORIGINAL = "{\"static\":{\"memory_limit_bytes\":536870912,\"pids_limit\":256}}";
    static final String NARROWED = "{\"static\":{\"memory_limit_bytes\":268435456,\"pids_limit\":128}}";
    static final String ALLOW_LIST = "{\"static\":{\"memory_limit_bytes\":536870912,\"pids_limit\":256},"
            + "\"dynamic\":{\"network_allow_list\":[\"example.com:443\"]}}";

    @Parameter
    TestGateway.Transport transport;

    @StartedGateway
    TestGateway gateway;

    private Sandbox create(PolicyMode mode) {
        return gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "agent", ORIGINAL, mode)
                        .build())
                .getSandbox();
    }

    private void stopSandbox(String id) {
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder().setTarget(byId(id)).build());
    }

    private StartSandboxResponse startSandbox(String id, String requestId) {
        return gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(id))
                        .setRequestId(requestId)
                        .build());
    }

    private UpdateSandboxPolicyResponse update(String id, String document) {
        return gateway.stub()
                .updateSandboxPolicy(UpdateSandboxPolicyRequest.newBuilder()
                        .setTarget(byId(id))
                        .setDocument(document)
                        .build());
    }

    private LaunchInput lastLaunch() {
        List<LaunchInput> launches = gateway.driver().launches();
        return launches.getLast();
    }

    @Test
    @DisplayName("LIVE: stop, update, start launches with the newly admitted revision")
    void liveStopUpdateStartUsesNewRevision() {
        Sandbox sandbox = create(PolicyMode.LIVE);
        stopSandbox(sandbox.getId());

        UpdateSandboxPolicyResponse updated = update(sandbox.getId(), NARROWED);
        StartSandboxResponse started = startSandbox(sandbox.getId(), newRequestId());

        String narrowedDigest = PolicyDocument.parse(NARROWED).digest();
        assertThat(updated.getAdmitted().getRevision()).isEqualTo(2);
        assertThat(updated.getAdmitted().getDigest()).isEqualTo(narrowedDigest);
        assertThat(started.getSandbox().getLaunchInput().getGeneration()).isEqualTo(2);
        assertThat(started.getSandbox().getLaunchInput().getPolicyRevision()).isEqualTo(2);
        assertThat(started.getSandbox().getLaunchInput().getPolicyDigest()).isEqualTo(narrowedDigest);
        assertThat(lastLaunch().generation()).isEqualTo(2);
        assertThat(lastLaunch().policy().revision()).isEqualTo(2);
        assertThat(lastLaunch().policy().staticPolicy().memoryLimitBytes()).isEqualTo(268435456);
    }

    @Test
    @DisplayName("LIVE: a retry keeps the committed input even after a newer revision is admitted")
    void retryKeepsCommittedInput() {
        Sandbox sandbox = create(PolicyMode.LIVE);
        stopSandbox(sandbox.getId());
        update(sandbox.getId(), NARROWED);
        String requestId = newRequestId();
        gateway.driver().failNext(FakeDriver.Method.START, new DriverException(DriverErrorCode.UNAVAILABLE, "down"));
        GrpcErrors.Failure pending = failure(() -> startSandbox(sandbox.getId(), requestId));
        UpdateSandboxPolicyResponse newer = update(
                sandbox.getId(),
                NARROWED.replace("}}", "},\"dynamic\":{\"network_allow_list\":[\"example.com:443\"]}}"));

        StartSandboxResponse retry = startSandbox(sandbox.getId(), requestId);

        assertThat(pending.reason()).isEqualTo("TRANSITION_PENDING");
        assertThat(newer.getAdmitted().getRevision()).isEqualTo(3);
        assertThat(retry.getReplayed()).isTrue();
        assertThat(retry.getExecution().getGeneration()).isEqualTo(2);
        List<LaunchInput> ofGeneration2 = gateway.driver().launches().stream()
                .filter(l -> l.generation() == 2)
                .toList();
        assertThat(ofGeneration2).isNotEmpty().allSatisfy(l -> {
            assertThat(l.policy().revision()).isEqualTo(2);
            assertThat(l.policy().digest())
                    .isEqualTo(PolicyDocument.parse(NARROWED).digest());
        });
    }

    @Test
    @DisplayName("LIVE: a recovery after a restart keeps the committed input")
    void recoveryKeepsCommittedInput() {
        Sandbox sandbox = create(PolicyMode.LIVE);
        stopSandbox(sandbox.getId());
        update(sandbox.getId(), NARROWED);
        String requestId = newRequestId();
        gateway.driver().failEach(FakeDriver.Method.START, new DriverException(DriverErrorCode.UNAVAILABLE, "down"));
        failure(() -> startSandbox(sandbox.getId(), requestId));

        gateway.restart();
        StartSandboxResponse replay = startSandbox(sandbox.getId(), requestId);

        assertThat(gateway.driver().launches()).hasSize(1);
        LaunchInput recovered = gateway.driver().launches().getFirst();
        assertThat(recovered.generation()).isEqualTo(2);
        assertThat(recovered.policy().revision()).isEqualTo(2);
        assertThat(recovered.policy().digest())
                .isEqualTo(PolicyDocument.parse(NARROWED).digest());
        assertThat(replay.getReplayed()).isTrue();
        assertThat(replay.getSandbox().getLaunchInput().getPolicyRevision()).isEqualTo(2);
    }

    @Test
    @DisplayName("LIVE: changing the static policy while running is STATIC_POLICY_CHANGE_REQUIRES_STOP")
    void staticChangeWhileRunningIsRejected() {
        Sandbox sandbox = create(PolicyMode.LIVE);

        GrpcErrors.Failure failure = failure(() -> update(sandbox.getId(), NARROWED));

        assertThat(failure.code()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(failure.reason()).isEqualTo("STATIC_POLICY_CHANGE_REQUIRES_STOP");
    }

    @Test
    @DisplayName("LIVE: the dynamic part may change while running; the running execution keeps its launch input")
    void dynamicChangeWhileRunning() {
        Sandbox sandbox = create(PolicyMode.LIVE);

        UpdateSandboxPolicyResponse updated = update(sandbox.getId(), ALLOW_LIST);
        GetSandboxPolicyResponse policy = gateway.stub()
                .getSandboxPolicy(GetSandboxPolicyRequest.newBuilder()
                        .setTarget(byId(sandbox.getId()))
                        .build());

        assertThat(updated.getChanged()).isTrue();
        assertThat(policy.getAdmitted().getRevision()).isEqualTo(2);
        assertThat(policy.getAdmitted().getCanonicalDocument()).contains("example.com:443");
        assertThat(policy.getCurrentLaunch().getRevision()).isEqualTo(1);
        assertThat(policy.getLaunchInput().getPolicyRevision()).isEqualTo(1);
    }

    @Test
    @DisplayName("FROZEN: an update is POLICY_FROZEN and every restart uses the creation snapshot")
    void frozenRejectsUpdatesAndKeepsSnapshot() {
        Sandbox sandbox = create(PolicyMode.FROZEN);
        stopSandbox(sandbox.getId());

        GrpcErrors.Failure failure = failure(() -> update(sandbox.getId(), NARROWED));
        StartSandboxResponse started = startSandbox(sandbox.getId(), newRequestId());

        String originalDigest = PolicyDocument.parse(ORIGINAL).digest();
        assertThat(failure.code()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(failure.reason()).isEqualTo("POLICY_FROZEN");
        assertThat(started.getSandbox().getPolicy().getMode()).isEqualTo(PolicyMode.FROZEN);
        assertThat(started.getSandbox().getLaunchInput().getPolicyRevision()).isEqualTo(1);
        assertThat(started.getSandbox().getLaunchInput().getPolicyDigest()).isEqualTo(originalDigest);
        assertThat(lastLaunch().generation()).isEqualTo(2);
        assertThat(lastLaunch().policy().digest()).isEqualTo(originalDigest);
    }

    @Test
    @DisplayName("FROZEN: a recovered start uses the creation snapshot")
    void frozenRecoveryKeepsSnapshot() {
        Sandbox sandbox = create(PolicyMode.FROZEN);
        stopSandbox(sandbox.getId());
        gateway.driver().failEach(FakeDriver.Method.START, new DriverException(DriverErrorCode.UNAVAILABLE, "down"));
        failure(() -> startSandbox(sandbox.getId(), newRequestId()));

        gateway.restart();

        LaunchInput recovered = gateway.driver().launches().getFirst();
        assertThat(recovered.generation()).isEqualTo(2);
        assertThat(recovered.policy().revision()).isEqualTo(1);
        assertThat(recovered.policy().digest())
                .isEqualTo(PolicyDocument.parse(ORIGINAL).digest());
    }

    @Test
    @DisplayName("an update that expects another revision is ABORTED with REVISION_MISMATCH")
    void revisionMismatch() {
        Sandbox sandbox = create(PolicyMode.LIVE);

        GrpcErrors.Failure failure = failure(() -> gateway.stub()
                .updateSandboxPolicy(UpdateSandboxPolicyRequest.newBuilder()
                        .setTarget(byId(sandbox.getId()))
                        .setDocument(ALLOW_LIST)
                        .setExpectedRevision(7)
                        .build()));

        assertThat(failure.code()).isEqualTo(Status.Code.ABORTED);
        assertThat(failure.reason()).isEqualTo("REVISION_MISMATCH");
    }

    @Test
    @DisplayName("an update with a canonically equal document admits no new revision")
    void unchangedUpdate() {
        Sandbox sandbox = create(PolicyMode.LIVE);

        UpdateSandboxPolicyResponse same = update(
                sandbox.getId(),
                "{ \"static\" : { \"pids_limit\" : 256," + " \"memory_limit_bytes\" : 536870912.0 }, \"version\": 1 }");

        assertThat(same.getChanged()).isFalse();
        assertThat(same.getAdmitted().getRevision()).isEqualTo(1);
    }

    @Test
    @DisplayName("without a policy, create applies the documented default")
    void defaultPolicy() {
        Sandbox sandbox = gateway.create("team", "agent");

        GetSandboxPolicyResponse policy = gateway.stub()
                .getSandboxPolicy(GetSandboxPolicyRequest.newBuilder()
                        .setTarget(byId(sandbox.getId()))
                        .build());

        assertThat(policy.getMode()).isEqualTo(PolicyMode.LIVE);
        assertThat(policy.getAdmitted().getDigest()).isEqualTo(PolicyDocument.DEFAULT.digest());
        assertThat(policy.getAdmitted().getCanonicalDocument())
                .isEqualTo("{\"dynamic\":{\"network_allow_list\":[]},\"static\":{\"cpu_limit_millis\":0,"
                        + "\"drop_capabilities\":[],\"memory_limit_bytes\":0,\"network_mode\":\"none\","
                        + "\"no_new_privileges\":false,\"pids_limit\":0,\"read_only_root_filesystem\":false},"
                        + "\"version\":1}");
    }

    @Test
    @DisplayName("an oversized or malformed document is INVALID_ARGUMENT naming the field; nothing is written")
    void badDocuments() {
        String oversized = "{\"dynamic\":{\"network_allow_list\":[\"" + "a".repeat(70_000) + "\"]}}";

        GrpcErrors.Failure tooBig = failure(() -> gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "agent", oversized, PolicyMode.LIVE)
                        .build()));
        GrpcErrors.Failure unknownField = failure(() -> gateway.stub()
                .createSandbox(TestGateway.createRequest(
                                "team", "agent", "{\"static\":{\"privileged\":true}}", PolicyMode.LIVE)
                        .build()));
        GrpcErrors.Failure duplicate = failure(() -> gateway.stub()
                .createSandbox(
                        TestGateway.createRequest("team", "agent", "{\"version\":1,\"version\":1}", PolicyMode.LIVE)
                                .build()));

        assertThat(tooBig.field()).contains("policy.document");
        assertThat(unknownField.field()).contains("policy.static.privileged");
        assertThat(duplicate.field()).contains("policy.document");
        assertThat(gateway.driver().calls(FakeDriver.Method.CREATE)).isZero();
    }
}
