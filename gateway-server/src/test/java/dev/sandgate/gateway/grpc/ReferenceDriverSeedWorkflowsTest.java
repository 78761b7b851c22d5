package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static dev.sandgate.gateway.testing.TestGateway.byName;
import static dev.sandgate.gateway.testing.TestGateway.newRequestId;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.ExecutionPrecondition;
import dev.sandgate.api.v1.PolicyMode;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StartSandboxResponse;
import dev.sandgate.api.v1.StopOutcome;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyRequest;
import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.gateway.testing.TestGateway;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The three seed workflows end to end over Netty on loopback, on the reference driver chosen by ServiceLoader. */
class ReferenceDriverSeedWorkflowsTest {
    @TempDir
    Path root;

    TestGateway gateway;

    @BeforeEach
    void start() {
        gateway = TestGateway.startOnReferenceDriver(root, TestGateway.Transport.NETTY);
    }

    @AfterEach
    void stop() {
        gateway.close();
    }

    private StopSandboxRequest conditionalStop(String token) {
        return StopSandboxRequest.newBuilder()
                .setTarget(byName("team", "agent"))
                .setPrecondition(ExecutionPrecondition.newBuilder().setExpectedExecutionToken(token))
                .build();
    }

    @Test
    @DisplayName("stale stops after stop/start and after delete/recreate are rejected; a matching stop stops")
    void conditionalStop() {
        Sandbox first = gateway.create("team", "agent");
        String firstToken = first.getCurrentExecution().getExecutionToken();
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(first.getId()))
                        .build());
        StartSandboxResponse restarted = gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(first.getId()))
                        .build());

        assertThat(failure(() -> gateway.stub().stopSandbox(conditionalStop(firstToken)))
                        .reason())
                .isEqualTo("STALE_EXECUTION");
        String secondToken = restarted.getExecution().getExecutionToken();
        gateway.stub()
                .deleteSandbox(DeleteSandboxRequest.newBuilder()
                        .setTarget(byId(first.getId()))
                        .build());
        Sandbox replacement = gateway.create("team", "agent");
        assertThat(failure(() -> gateway.stub().stopSandbox(conditionalStop(secondToken)))
                        .reason())
                .isEqualTo("STALE_EXECUTION");
        assertThat(gateway.stub()
                        .stopSandbox(conditionalStop(
                                replacement.getCurrentExecution().getExecutionToken()))
                        .getOutcome())
                .isEqualTo(StopOutcome.STOPPED_NOW);
    }

    @Test
    @DisplayName("LIVE stop/update/start launches the new revision; FROZEN rejects the update and keeps its snapshot")
    void policyPerLaunch() {
        Sandbox live = gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "live", PolicyCaptureTest.ORIGINAL, PolicyMode.LIVE)
                        .build())
                .getSandbox();
        Sandbox frozen = gateway.stub()
                .createSandbox(
                        TestGateway.createRequest("team", "frozen", PolicyCaptureTest.ORIGINAL, PolicyMode.FROZEN)
                                .build())
                .getSandbox();
        for (Sandbox s : new Sandbox[] {live, frozen}) {
            gateway.stub()
                    .stopSandbox(StopSandboxRequest.newBuilder()
                            .setTarget(byId(s.getId()))
                            .build());
        }

        gateway.stub()
                .updateSandboxPolicy(UpdateSandboxPolicyRequest.newBuilder()
                        .setTarget(byId(live.getId()))
                        .setDocument(PolicyCaptureTest.NARROWED)
                        .build());
        String frozenUpdate = failure(() -> gateway.stub()
                        .updateSandboxPolicy(UpdateSandboxPolicyRequest.newBuilder()
                                .setTarget(byId(frozen.getId()))
                                .setDocument(PolicyCaptureTest.NARROWED)
                                .build()))
                .reason();
        StartSandboxRequest liveStart = StartSandboxRequest.newBuilder()
                .setRequestId(newRequestId())
                .setTarget(byId(live.getId()))
                .build();
        Sandbox liveStarted = gateway.stub().startSandbox(liveStart).getSandbox();
        Sandbox frozenStarted = gateway.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(frozen.getId()))
                        .build())
                .getSandbox();
        StartSandboxResponse retry = gateway.stub().startSandbox(liveStart);

        assertThat(frozenUpdate).isEqualTo("POLICY_FROZEN");
        assertThat(liveStarted.getLaunchInput().getPolicyRevision()).isEqualTo(2);
        assertThat(liveStarted.getLaunchInput().getPolicyDigest())
                .isEqualTo(PolicyDocument.parse(PolicyCaptureTest.NARROWED).digest());
        assertThat(frozenStarted.getLaunchInput().getPolicyRevision()).isEqualTo(1);
        assertThat(frozenStarted.getLaunchInput().getPolicyDigest())
                .isEqualTo(PolicyDocument.parse(PolicyCaptureTest.ORIGINAL).digest());
        assertThat(retry.getReplayed()).isTrue();
        assertThat(retry.getSandbox().getLaunchInput()).isEqualTo(liveStarted.getLaunchInput());
    }
}
