package dev.sandgate.gateway.testing;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.BadRequest;
import com.google.rpc.ErrorInfo;
import com.google.rpc.PreconditionFailure;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.Optional;
import org.assertj.core.api.ThrowableAssert;

/** Reads the structured error details the gateway sends. */
public final class GrpcErrors {
    private GrpcErrors() {}

    /** What a failed call answered. */
    public record Failure(
            Status.Code code,
            String reason,
            Optional<String> field,
            Optional<PreconditionFailure> precondition,
            String message) {}

    /** Runs {@code call}, which must fail with a gRPC status, and returns what it answered. */
    public static Failure failure(ThrowableAssert.ThrowingCallable call) {
        try {
            call.call();
        } catch (StatusRuntimeException e) {
            return read(e);
        } catch (Throwable t) {
            throw new AssertionError("expected a gRPC status, got " + t, t);
        }
        throw new AssertionError("expected the call to fail");
    }

    public static Failure read(StatusRuntimeException e) {
        com.google.rpc.Status status = StatusProto.fromThrowable(e);
        if (status == null) {
            return new Failure(
                    e.getStatus().getCode(),
                    "",
                    Optional.empty(),
                    Optional.empty(),
                    String.valueOf(e.getStatus().getDescription()));
        }
        String reason = "";
        Optional<String> field = Optional.empty();
        Optional<PreconditionFailure> precondition = Optional.empty();
        try {
            for (Any detail : status.getDetailsList()) {
                if (detail.is(ErrorInfo.class)) {
                    reason = detail.unpack(ErrorInfo.class).getReason();
                } else if (detail.is(BadRequest.class)) {
                    field = Optional.of(detail.unpack(BadRequest.class)
                            .getFieldViolations(0)
                            .getField());
                } else if (detail.is(PreconditionFailure.class)) {
                    precondition = Optional.of(detail.unpack(PreconditionFailure.class));
                }
            }
        } catch (InvalidProtocolBufferException ex) {
            throw new AssertionError(ex);
        }
        return new Failure(
                Status.fromCodeValue(status.getCode()).getCode(), reason, field, precondition, status.getMessage());
    }
}
