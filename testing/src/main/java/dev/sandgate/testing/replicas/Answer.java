package dev.sandgate.testing.replicas;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.DeleteSandboxResponse;
import dev.sandgate.api.v1.Operation;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StartSandboxResponse;
import dev.sandgate.api.v1.StopSandboxResponse;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.Optional;

/**
 * The definitive answer to one lifecycle request: a success (its sandbox id, generation and outcome) or a recorded
 * failure (its code and reason). {@link #sameAs} compares what a replay must repeat.
 */
record Answer(
        Status.Code code,
        String reason,
        String sandboxId,
        long generation,
        String outcome,
        boolean replayed,
        Optional<Sandbox> sandbox) {

    static Answer of(CreateSandboxResponse r) {
        Sandbox s = r.getSandbox();
        return new Answer(
                Status.Code.OK,
                "",
                s.getId(),
                s.getCurrentExecution().getGeneration(),
                "CREATED",
                r.getReplayed(),
                Optional.of(s));
    }

    static Answer of(StopSandboxResponse r) {
        return new Answer(
                Status.Code.OK,
                "",
                r.getSandbox().getId(),
                r.getGeneration(),
                r.getOutcome().name(),
                r.getReplayed(),
                Optional.of(r.getSandbox()));
    }

    static Answer of(StartSandboxResponse r) {
        return new Answer(
                Status.Code.OK,
                "",
                r.getSandbox().getId(),
                r.getExecution().getGeneration(),
                r.getOutcome().name(),
                r.getReplayed(),
                Optional.of(r.getSandbox()));
    }

    static Answer of(DeleteSandboxResponse r) {
        return new Answer(
                Status.Code.OK,
                "",
                r.getSandboxId(),
                r.getGeneration(),
                r.getOutcome().name(),
                r.getReplayed(),
                Optional.empty());
    }

    static Answer of(StatusRuntimeException e) {
        return new Answer(e.getStatus().getCode(), reason(e), "", 0, "", false, Optional.empty());
    }

    /** The answer {@code GetOperation} holds for a finished request (replayed false, as documented). */
    static Answer of(Operation operation) {
        return switch (operation.getResultCase()) {
            case CREATE -> of(operation.getCreate());
            case STOP -> of(operation.getStop());
            case START -> of(operation.getStart());
            case DELETE -> of(operation.getDelete());
            case ERROR -> {
                com.google.rpc.Status status = operation.getError();
                yield new Answer(
                        Status.fromCodeValue(status.getCode()).getCode(),
                        reason(status),
                        "",
                        0,
                        "",
                        false,
                        Optional.empty());
            }
            default ->
                throw new AssertionError(
                        "operation " + operation.getRequestId() + " has no result: " + operation.getResultCase());
        };
    }

    boolean ok() {
        return code == Status.Code.OK;
    }

    boolean sameAs(Answer other) {
        return code == other.code
                && reason.equals(other.reason)
                && sandboxId.equals(other.sandboxId)
                && generation == other.generation
                && outcome.equals(other.outcome);
    }

    @Override
    public String toString() {
        return ok()
                ? outcome + " " + sandboxId + " g" + generation + (replayed ? " (replayed)" : "")
                : code + "/" + reason;
    }

    /** The ErrorInfo reason of a gateway error, or "" (a transport failure carries none). */
    static String reason(StatusRuntimeException e) {
        com.google.rpc.Status status = StatusProto.fromThrowable(e);
        return status == null ? "" : reason(status);
    }

    private static String reason(com.google.rpc.Status status) {
        for (Any detail : status.getDetailsList()) {
            if (detail.is(ErrorInfo.class)) {
                try {
                    return detail.unpack(ErrorInfo.class).getReason();
                } catch (InvalidProtocolBufferException e) {
                    return "";
                }
            }
        }
        return "";
    }
}
