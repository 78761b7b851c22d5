package dev.sandgate.gateway.grpc;

import com.google.protobuf.Any;
import com.google.rpc.BadRequest;
import com.google.rpc.ErrorInfo;
import com.google.rpc.PreconditionFailure;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.store.ErrorRecord;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Mismatch;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place where failures become gRPC statuses: every {@link ErrorReason} has exactly one code, and every status
 * carries a {@code google.rpc.ErrorInfo} (domain {@value #DOMAIN}) plus {@code BadRequest} or {@code
 * PreconditionFailure} detail where it applies. Anything unexpected becomes INTERNAL (reason INTERNAL), never a bare
 * UNKNOWN.
 */
public final class ErrorMapper {
    public static final String DOMAIN = "sandgate.dev";

    private static final Logger log = LoggerFactory.getLogger(ErrorMapper.class);

    private ErrorMapper() {}

    /** The gRPC code of each reason. docs/api.md has the same table. */
    public static Status.Code code(ErrorReason reason) {
        return switch (reason) {
            case INVALID_FIELD -> Status.Code.INVALID_ARGUMENT;
            case SANDBOX_NOT_FOUND, OPERATION_NOT_FOUND -> Status.Code.NOT_FOUND;
            case SANDBOX_ALREADY_EXISTS, REQUEST_ID_REUSED, RUNTIME_ALREADY_EXISTS -> Status.Code.ALREADY_EXISTS;
            case SANDBOX_ID_MISMATCH,
                    STALE_EXECUTION,
                    NOT_RUNNING,
                    EXECUTION_TOKEN_INVALID,
                    POLICY_FROZEN,
                    STATIC_POLICY_CHANGE_REQUIRES_STOP,
                    DRIVER_CAPABILITY_MISSING,
                    RUNTIME_MISSING,
                    RUNTIME_CONFLICT,
                    EXEC_OUTCOME_UNCERTAIN -> Status.Code.FAILED_PRECONDITION;
            case CAPABILITY_UNSUPPORTED -> Status.Code.UNIMPLEMENTED;
            case REVISION_MISMATCH, DRIVER_ABORTED, TRANSITION_CANCELLED -> Status.Code.ABORTED;
            case SANDBOX_BUSY -> Status.Code.DEADLINE_EXCEEDED;
            case TRANSITION_PENDING, DRIVER_UNAVAILABLE, GATEWAY_SHUTTING_DOWN -> Status.Code.UNAVAILABLE;
            case WATCH_OVERFLOW -> Status.Code.RESOURCE_EXHAUSTED;
            case UNAUTHENTICATED -> Status.Code.UNAUTHENTICATED;
            case PERMISSION_DENIED -> Status.Code.PERMISSION_DENIED;
            case DRIVER_INTERNAL, INTERNAL -> Status.Code.INTERNAL;
        };
    }

    /** The status to send for any failure. */
    public static StatusRuntimeException toStatusException(Throwable failure) {
        if (failure instanceof StatusRuntimeException status) {
            return status;
        }
        return StatusProto.toStatusRuntimeException(toRpcStatus(asGatewayException(failure)));
    }

    /** The {@code google.rpc.Status} of a recorded error (for GetOperation). */
    public static com.google.rpc.Status toRpcStatus(ErrorRecord error) {
        return toRpcStatus(error.toException());
    }

    static GatewayException asGatewayException(Throwable failure) {
        return switch (failure) {
            case GatewayException g -> g;
            case DriverException d -> GatewayException.fromDriver(d);
            default -> {
                log.error("unexpected failure at the API boundary", failure);
                yield new GatewayException(
                        ErrorReason.INTERNAL,
                        "internal error (" + failure.getClass().getSimpleName() + ")");
            }
        };
    }

    public static com.google.rpc.Status toRpcStatus(GatewayException e) {
        ErrorInfo.Builder info = ErrorInfo.newBuilder()
                .setReason(e.reason().name())
                .setDomain(DOMAIN)
                .putAllMetadata(e.metadata());
        e.field().ifPresent(field -> info.putMetadata("field", field));
        for (Mismatch m : e.mismatches()) {
            info.putMetadata("expected_" + m.subject(), m.expected());
            info.putMetadata("actual_" + m.subject(), m.actual());
        }
        com.google.rpc.Status.Builder status = com.google.rpc.Status.newBuilder()
                .setCode(code(e.reason()).value())
                .setMessage(e.getMessage())
                .addDetails(Any.pack(info.build()));
        e.field()
                .ifPresent(field -> status.addDetails(Any.pack(BadRequest.newBuilder()
                        .addFieldViolations(BadRequest.FieldViolation.newBuilder()
                                .setField(field)
                                .setDescription(e.getMessage())
                                .setReason(e.reason().name()))
                        .build())));
        if (!e.mismatches().isEmpty()) {
            PreconditionFailure.Builder failure = PreconditionFailure.newBuilder();
            for (Mismatch m : e.mismatches()) {
                failure.addViolations(PreconditionFailure.Violation.newBuilder()
                        .setType(e.reason().name())
                        .setSubject(m.subject())
                        .setDescription("expected " + m.expected() + ", actual " + m.actual()));
            }
            status.addDetails(Any.pack(failure.build()));
        }
        return status.build();
    }
}
