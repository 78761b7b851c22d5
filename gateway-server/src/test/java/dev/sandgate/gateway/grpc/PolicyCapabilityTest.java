package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.GetSandboxPolicyRequest;
import dev.sandgate.api.v1.GetSandboxPolicyResponse;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.PolicyMode;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyRequest;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.spi.PolicyField;
import io.grpc.Status;
import java.nio.file.Path;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a driver cannot do is refused with DRIVER_CAPABILITY_MISSING before anything is written or launched. */
class PolicyCapabilityTest {
    @TempDir
    Path root;

    @Test
    @DisplayName("a policy field the driver cannot enforce is refused at create; nothing is written")
    void unenforceableFieldAtCreate() {
        try (TestGateway gateway = TestGateway.start(
                root,
                TestGateway.Transport.IN_PROCESS,
                FakeDriver.capabilitiesWithout(Set.of(PolicyField.MEMORY_LIMIT), true))) {
            GrpcErrors.Failure failure = failure(() -> gateway.stub()
                    .createSandbox(
                            TestGateway.createRequest("team", "agent", PolicyCaptureTest.ORIGINAL, PolicyMode.LIVE)
                                    .build()));

            assertThat(failure.code()).isEqualTo(Status.Code.FAILED_PRECONDITION);
            assertThat(failure.reason()).isEqualTo("DRIVER_CAPABILITY_MISSING");
            assertThat(gateway.stub()
                            .listSandboxes(ListSandboxesRequest.getDefaultInstance())
                            .getSandboxesCount())
                    .isZero();
            assertThat(gateway.driver().calls(FakeDriver.Method.CREATE)).isZero();
        }
    }

    /** A LIVE sandbox with {@link PolicyCaptureTest#ORIGINAL}, stopped: every policy change may be admitted. */
    private static Sandbox createdAndStopped(TestGateway gateway) {
        Sandbox sandbox = gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "agent", PolicyCaptureTest.ORIGINAL, PolicyMode.LIVE)
                        .build())
                .getSandbox();
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(sandbox.getId()))
                        .build());
        return sandbox;
    }

    @Test
    @DisplayName("a revision the driver could not launch is refused at update, naming the field; nothing is admitted")
    void unlaunchableRevisionIsRefusedAtUpdate() {
        try (TestGateway gateway = TestGateway.start(root, TestGateway.Transport.IN_PROCESS)) {
            Sandbox sandbox = createdAndStopped(gateway);

            GrpcErrors.Failure failure = failure(() -> gateway.stub()
                    .updateSandboxPolicy(UpdateSandboxPolicyRequest.newBuilder()
                            .setTarget(byId(sandbox.getId()))
                            .setDocument(
                                    "{\"static\":{\"memory_limit_bytes\":" + (FakeDriver.MIN_MEMORY_BYTES - 1) + "}}")
                            .build()));

            assertThat(failure.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(failure.field()).contains("policy.static.memory_limit_bytes");
            GetSandboxPolicyResponse policy = gateway.stub()
                    .getSandboxPolicy(GetSandboxPolicyRequest.newBuilder()
                            .setTarget(byId(sandbox.getId()))
                            .build());
            assertThat(policy.getAdmitted().getRevision()).isEqualTo(1);
            assertThat(gateway.stub()
                            .startSandbox(StartSandboxRequest.newBuilder()
                                    .setTarget(byId(sandbox.getId()))
                                    .build())
                            .getSandbox()
                            .getLaunchInput()
                            .getPolicyRevision())
                    .isEqualTo(1);
        }
    }

    @Test
    @DisplayName("a driver that cannot launch a changed policy refuses policy updates")
    void noLaunchPolicyOnStart() {
        try (TestGateway gateway = TestGateway.start(
                root, TestGateway.Transport.IN_PROCESS, FakeDriver.capabilitiesWithout(Set.of(), false))) {
            Sandbox sandbox = createdAndStopped(gateway);

            GrpcErrors.Failure failure = failure(() -> gateway.stub()
                    .updateSandboxPolicy(UpdateSandboxPolicyRequest.newBuilder()
                            .setTarget(byId(sandbox.getId()))
                            .setDocument(PolicyCaptureTest.NARROWED)
                            .build()));

            assertThat(failure.reason()).isEqualTo("DRIVER_CAPABILITY_MISSING");
        }
    }
}
