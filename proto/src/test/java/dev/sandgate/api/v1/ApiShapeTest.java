package dev.sandgate.api.v1;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The parts of the API's shape that clients and the gateway rely on. */
class ApiShapeTest {
    private static final ServiceDescriptor SERVICE =
            SandboxServiceProto.getDescriptor().findServiceByName("SandboxService");
    private static final Set<String> MUTATING = Set.of(
            "CreateSandbox",
            "StopSandbox",
            "StartSandbox",
            "DeleteSandbox",
            "UpdateSandboxPolicy",
            "RenewSandboxLease");

    @Test
    @DisplayName("the service has the lifecycle methods, GetOperation, lease renewal, exec and logs")
    void methods() {
        assertThat(SERVICE.getMethods())
                .extracting(MethodDescriptor::getName)
                .containsExactlyInAnyOrder(
                        "CreateSandbox",
                        "GetSandbox",
                        "ListSandboxes",
                        "StopSandbox",
                        "StartSandbox",
                        "DeleteSandbox",
                        "WatchSandboxes",
                        "UpdateSandboxPolicy",
                        "GetSandboxPolicy",
                        "GetOperation",
                        "RenewSandboxLease",
                        "ExecSandbox",
                        "StreamSandboxLogs");
        assertThat(SERVICE.findMethodByName("WatchSandboxes").isServerStreaming())
                .isTrue();
        assertThat(SERVICE.findMethodByName("ExecSandbox").isClientStreaming()).isTrue();
        assertThat(SERVICE.findMethodByName("ExecSandbox").isServerStreaming()).isTrue();
        assertThat(SERVICE.findMethodByName("StreamSandboxLogs").isServerStreaming())
                .isTrue();
    }

    @Test
    @DisplayName("every mutating request carries request_id as field 1")
    void mutatingRequestsCarryRequestId() {
        for (String name : MUTATING) {
            FieldDescriptor requestId =
                    SERVICE.findMethodByName(name).getInputType().findFieldByName("request_id");
            assertThat(requestId).as(name).isNotNull();
            assertThat(requestId.getNumber()).as(name).isEqualTo(1);
        }
    }

    @Test
    @DisplayName("every request on one existing sandbox names it with a SandboxTarget")
    void targetedRequestsUseSandboxTarget() {
        for (String name : List.of(
                "GetSandbox",
                "StopSandbox",
                "StartSandbox",
                "DeleteSandbox",
                "UpdateSandboxPolicy",
                "GetSandboxPolicy",
                "RenewSandboxLease",
                "StreamSandboxLogs")) {
            FieldDescriptor target =
                    SERVICE.findMethodByName(name).getInputType().findFieldByName("target");
            assertThat(target).as(name).isNotNull();
            assertThat(target.getMessageType()).isEqualTo(SandboxTarget.getDescriptor());
        }
    }

    @Test
    @DisplayName("a precondition's presence is visible, so an empty one can be refused instead of ignored")
    void preconditionPresenceIsTracked() {
        assertThat(StopSandboxRequest.newBuilder()
                        .setPrecondition(ExecutionPrecondition.getDefaultInstance())
                        .build()
                        .hasPrecondition())
                .isTrue();
        assertThat(DeleteSandboxRequest.getDescriptor()
                        .findFieldByName("precondition")
                        .hasPresence())
                .isTrue();
    }
}
