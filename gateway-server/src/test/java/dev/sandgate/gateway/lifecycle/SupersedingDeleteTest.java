package dev.sandgate.gateway.lifecycle;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static dev.sandgate.gateway.testing.TestGateway.byName;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.Condition;
import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.DeleteOutcome;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.SandboxSpec;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import io.grpc.Status;
import java.nio.file.Path;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A launch that can never complete must not keep a sandbox from being deleted: a delete supersedes a pending create or
 * start, durably, and a launch the driver refuses for good ends in ERROR with its cause instead of being retried.
 */
class SupersedingDeleteTest {
    @TempDir
    Path root;

    @Test
    @DisplayName(
            "a delete of a sandbox whose create stays pending deletes it; the create's request says it was cancelled")
    void deleteSupersedesAPendingCreate() {
        try (TestGateway gateway = TestGateway.start(root, TestGateway.Transport.IN_PROCESS)) {
            gateway.driver().beforeEach(FakeDriver.Method.CREATE, ref -> {
                throw new DriverException(DriverErrorCode.UNAVAILABLE, "the registry does not answer");
            });
            CreateSandboxRequest create = TestGateway.createRequest("team", "stuck")
                    .setRequestId(TestGateway.newRequestId())
                    .build();
            GrpcErrors.Failure pending = failure(() -> gateway.stub().createSandbox(create));

            var deleted = gateway.stub()
                    .deleteSandbox(DeleteSandboxRequest.newBuilder()
                            .setTarget(byName("team", "stuck"))
                            .build());

            assertThat(pending.reason()).isEqualTo("TRANSITION_PENDING");
            assertThat(deleted.getOutcome()).isEqualTo(DeleteOutcome.DELETED_NOW);
            assertThat(failure(() -> get(gateway, deleted.getSandboxId())).code())
                    .isEqualTo(Status.Code.NOT_FOUND);
            GrpcErrors.Failure replay = failure(() -> gateway.stub().createSandbox(create));
            assertThat(replay.code()).isEqualTo(Status.Code.ABORTED);
            assertThat(replay.reason()).isEqualTo("TRANSITION_CANCELLED");
            assertThat(gateway.driver().list()).isEmpty();
            assertThat(failure(() -> gateway.stub()
                                    .createSandbox(TestGateway.createRequest("team", "stuck")
                                            .build()))
                            .reason())
                    .as(
                            "the name is free again: a new create is admitted (and stays pending: the driver still refuses)")
                    .isEqualTo("TRANSITION_PENDING");
        }
    }

    @Test
    @DisplayName("a delete of a sandbox whose start stays pending deletes it, whatever generation the start reached")
    void deleteSupersedesAPendingStart() {
        try (TestGateway gateway = TestGateway.start(root, TestGateway.Transport.IN_PROCESS)) {
            Sandbox sandbox = gateway.create("team", "restarting");
            gateway.stub()
                    .stopSandbox(StopSandboxRequest.newBuilder()
                            .setTarget(byId(sandbox.getId()))
                            .build());
            gateway.driver().beforeEach(FakeDriver.Method.START, ref -> {
                throw new DriverException(DriverErrorCode.UNAVAILABLE, "the backend does not answer");
            });
            GrpcErrors.Failure pending = failure(() -> gateway.stub()
                    .startSandbox(StartSandboxRequest.newBuilder()
                            .setTarget(byId(sandbox.getId()))
                            .build()));

            var deleted = gateway.stub()
                    .deleteSandbox(DeleteSandboxRequest.newBuilder()
                            .setTarget(byId(sandbox.getId()))
                            .build());

            assertThat(pending.reason()).isEqualTo("TRANSITION_PENDING");
            assertThat(deleted.getOutcome()).isEqualTo(DeleteOutcome.DELETED_NOW);
            assertThat(gateway.driver().list()).isEmpty();
        }
    }

    @Test
    @DisplayName("a delete that superseded a pending create is what recovery completes after a crash; the create is"
            + " never launched again")
    void recoveryCompletesTheDeleteAndNeverTheCancelledCreate() {
        TestGateway gateway = TestGateway.start(root, TestGateway.Transport.IN_PROCESS);
        try {
            gateway.driver().beforeEach(FakeDriver.Method.CREATE, ref -> {
                throw new DriverException(DriverErrorCode.UNAVAILABLE, "the registry does not answer");
            });
            CreateSandboxRequest create = TestGateway.createRequest("team", "stuck")
                    .setRequestId(TestGateway.newRequestId())
                    .build();
            failure(() -> gateway.stub().createSandbox(create));
            String id = gateway.stub()
                    .getSandbox(GetSandboxRequest.newBuilder()
                            .setTarget(byName("team", "stuck"))
                            .build())
                    .getSandbox()
                    .getId();
            gateway.driver()
                    .failNext(FakeDriver.Method.DELETE, new DriverException(DriverErrorCode.UNAVAILABLE, "down"));
            DeleteSandboxRequest delete = DeleteSandboxRequest.newBuilder()
                    .setRequestId(TestGateway.newRequestId())
                    .setTarget(byId(id))
                    .build();
            GrpcErrors.Failure deletePending = failure(() -> gateway.stub().deleteSandbox(delete));

            gateway.restart(); // a new driver instance: it refuses no create

            assertThat(deletePending.reason()).isEqualTo("TRANSITION_PENDING");
            assertThat(gateway.driver().calls(FakeDriver.Method.CREATE))
                    .as("creates the recovered gateway asked for")
                    .isZero();
            assertThat(failure(() -> get(gateway, id)).code()).isEqualTo(Status.Code.NOT_FOUND);
            assertThat(gateway.driver().list()).isEmpty();
            assertThat(gateway.stub().deleteSandbox(delete).getOutcome()).isEqualTo(DeleteOutcome.DELETED_NOW);
            assertThat(failure(() -> gateway.stub().createSandbox(create)).reason())
                    .isEqualTo("TRANSITION_CANCELLED");
        } finally {
            gateway.close();
        }
    }

    @Test
    @DisplayName(
            "a create the driver refuses for good ends in ERROR with the cause, is not retried, and can be deleted")
    void permanentCreateFailureEndsInErrorWithItsCause() {
        try (TestGateway gateway = TestGateway.startOnReferenceDriver(root, TestGateway.Transport.IN_PROCESS)) {
            CreateSandboxRequest create = TestGateway.createRequest("team", "unpullable")
                    .setSpec(SandboxSpec.newBuilder().setImage("missing/sleeper"))
                    .build();

            GrpcErrors.Failure refused = failure(() -> gateway.stub().createSandbox(create));
            Sandbox failed = gateway.stub()
                    .getSandbox(GetSandboxRequest.newBuilder()
                            .setTarget(byName("team", "unpullable"))
                            .build())
                    .getSandbox();
            var deleted = gateway.stub()
                    .deleteSandbox(DeleteSandboxRequest.newBuilder()
                            .setTarget(byId(failed.getId()))
                            .build());

            assertThat(refused.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(refused.field()).contains("spec.image");
            assertThat(failed.getPhase()).isEqualTo(Phase.ERROR);
            assertThat(failed.getConditionsList())
                    .extracting(Condition::getType, Condition::getMessage)
                    .anySatisfy(condition -> {
                        assertThat(condition.toList().get(0)).isEqualTo("LAST_OPERATION_FAILED");
                        assertThat((String) condition.toList().get(1)).contains("missing/sleeper");
                    });
            assertThat(deleted.getOutcome()).isEqualTo(DeleteOutcome.DELETED_NOW);
        }
    }

    private static Sandbox get(TestGateway gateway, String id) {
        return gateway.stub()
                .getSandbox(GetSandboxRequest.newBuilder().setTarget(byId(id)).build())
                .getSandbox();
    }
}
