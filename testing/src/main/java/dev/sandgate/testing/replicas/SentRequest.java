package dev.sandgate.testing.replicas;

import com.google.protobuf.Message;
import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.SandboxServiceGrpc.SandboxServiceBlockingStub;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopSandboxRequest;
import io.grpc.StatusRuntimeException;
import java.util.Optional;

/** A lifecycle request as a client sent it (with its request_id), and the definitive answer it got. */
record SentRequest(String requestId, Message request, Answer answer) {
    String method() {
        return method(request);
    }

    static String method(Message request) {
        return switch (request) {
            case CreateSandboxRequest r -> "create";
            case StopSandboxRequest r -> "stop";
            case StartSandboxRequest r -> "start";
            case DeleteSandboxRequest r -> "delete";
            default -> throw new IllegalArgumentException(request.getClass().getName());
        };
    }

    /** Sends {@code request} once; a gRPC error is an answer too. */
    static Answer send(SandboxServiceBlockingStub stub, Message request) {
        try {
            return switch (request) {
                case CreateSandboxRequest r -> Answer.of(stub.createSandbox(r));
                case StopSandboxRequest r -> Answer.of(stub.stopSandbox(r));
                case StartSandboxRequest r -> Answer.of(stub.startSandbox(r));
                case DeleteSandboxRequest r -> Answer.of(stub.deleteSandbox(r));
                default -> throw new IllegalArgumentException(request.getClass().getName());
            };
        } catch (StatusRuntimeException e) {
            return Answer.of(e);
        }
    }

    /** The driver intent this request's answer says it carried out, if any. */
    Optional<DriverJournal.Intent> intent() {
        if (!answer.ok()) {
            return Optional.empty();
        }
        String id = answer.sandboxId();
        return switch (answer.outcome()) {
            case "CREATED" -> Optional.of(new DriverJournal.Intent("create", id, ""));
            case "LAUNCHED" -> Optional.of(new DriverJournal.Intent("start", id, Long.toString(answer.generation())));
            case "STOPPED_NOW" -> Optional.of(new DriverJournal.Intent("stop", id, Long.toString(answer.generation())));
            case "DELETED_NOW" -> Optional.of(new DriverJournal.Intent("delete", id, ""));
            default -> Optional.empty();
        };
    }
}
