package dev.sandgate.cli;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import com.google.rpc.BadRequest;
import com.google.rpc.DebugInfo;
import com.google.rpc.ErrorInfo;
import com.google.rpc.Help;
import com.google.rpc.LocalizedMessage;
import com.google.rpc.PreconditionFailure;
import com.google.rpc.QuotaFailure;
import com.google.rpc.RequestInfo;
import com.google.rpc.ResourceInfo;
import com.google.rpc.RetryInfo;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/** Turns a gRPC error into what a person (or, with {@code --json}, a program) needs: code, reason, field. */
final class RpcErrors {
    /** The standard google.rpc error details, so that JSON output can show them. */
    static final JsonFormat.TypeRegistry DETAIL_TYPES = JsonFormat.TypeRegistry.newBuilder()
            .add(ErrorInfo.getDescriptor())
            .add(BadRequest.getDescriptor())
            .add(PreconditionFailure.getDescriptor())
            .add(ResourceInfo.getDescriptor())
            .add(RetryInfo.getDescriptor())
            .add(RequestInfo.getDescriptor())
            .add(QuotaFailure.getDescriptor())
            .add(DebugInfo.getDescriptor())
            .add(Help.getDescriptor())
            .add(LocalizedMessage.getDescriptor())
            .build();

    private RpcErrors() {}

    /**
     * Lines for stderr: the code and description, then the reason, fields and precondition violations, and the
     * request_id of a mutating call ({@code requestId}; null for a read), whose outcome can be looked up afterwards.
     */
    static String describe(StatusRuntimeException error, String target, String requestId) {
        Status status = error.getStatus();
        StringBuilder text = new StringBuilder("error: ").append(status.getCode());
        if (status.getDescription() != null) {
            text.append(": ").append(status.getDescription());
        }
        text.append('\n');
        com.google.rpc.Status details = StatusProto.fromThrowable(error);
        if (details != null) {
            boolean fieldViolations = details.getDetailsList().stream().anyMatch(d -> d.is(BadRequest.class));
            for (Any detail : details.getDetailsList()) {
                appendDetail(text, detail, fieldViolations);
            }
        }
        connectionHint(error, target)
                .ifPresent(hint -> text.append("  ").append(hint).append('\n'));
        if (status.getCode() == Status.Code.DEADLINE_EXCEEDED) {
            text.append("  the call took longer than --timeout allows\n");
        }
        if (requestId != null) {
            text.append("  request id: ").append(requestId);
            switch (record(error)) {
                case RECORDED ->
                    text.append(" (look the outcome up with: sandgate operation get ")
                            .append(requestId)
                            .append(')');
                case UNKNOWN ->
                    text.append(" (if the gateway received the call, look the outcome up with: sandgate"
                                    + " operation get ")
                            .append(requestId)
                            .append(')');
                case NOT_RECORDED -> text.append(" (not recorded: the gateway did nothing with it)");
            }
            text.append('\n');
        }
        return text.toString();
    }

    /**
     * The error reasons whose request the gateway records, so that GetOperation finds it (docs/api.md, "Idempotent
     * requests"): definitive failures, and a pending transition (recorded, its result follows). Bad input, a busy
     * sandbox, a reused request id and an unreachable driver are not recorded.
     */
    private static final Set<String> RECORDED_REASONS = Set.of(
            "SANDBOX_NOT_FOUND",
            "SANDBOX_ALREADY_EXISTS",
            "SANDBOX_ID_MISMATCH",
            "STALE_EXECUTION",
            "EXECUTION_TOKEN_INVALID",
            "POLICY_FROZEN",
            "STATIC_POLICY_CHANGE_REQUIRES_STOP",
            "REVISION_MISMATCH",
            "DRIVER_CAPABILITY_MISSING",
            "RUNTIME_MISSING",
            "RUNTIME_CONFLICT",
            "RUNTIME_ALREADY_EXISTS",
            "DRIVER_INTERNAL",
            "TRANSITION_PENDING");

    /** Whether a mutating call's request is recorded by the gateway. */
    enum Recording {
        RECORDED,
        NOT_RECORDED,
        /** No gateway answered (deadline, connection lost): it may have received and recorded the call. */
        UNKNOWN
    }

    static Recording record(StatusRuntimeException error) {
        Optional<String> reason = reason(error);
        if (reason.isEmpty()) {
            return Recording.UNKNOWN;
        }
        return RECORDED_REASONS.contains(reason.get()) ? Recording.RECORDED : Recording.NOT_RECORDED;
    }

    /** The ErrorInfo reason, present when a Sandgate gateway answered. */
    private static Optional<String> reason(StatusRuntimeException error) {
        com.google.rpc.Status details = StatusProto.fromThrowable(error);
        if (details == null) {
            return Optional.empty();
        }
        for (Any detail : details.getDetailsList()) {
            if (detail.is(ErrorInfo.class)) {
                try {
                    return Optional.of(detail.unpack(ErrorInfo.class).getReason());
                } catch (InvalidProtocolBufferException e) {
                    return Optional.empty();
                }
            }
        }
        return Optional.empty();
    }

    /** For UNAVAILABLE that no gateway explained (it would have given a reason, e.g. GATEWAY_SHUTTING_DOWN). */
    private static Optional<String> connectionHint(StatusRuntimeException error, String target) {
        if (error.getStatus().getCode() != Status.Code.UNAVAILABLE
                || reason(error).isPresent()) {
            return Optional.empty();
        }
        return Optional.of("is a gateway listening on " + target + "? (--target or SANDGATE_TARGET)");
    }

    /**
     * The error as a google.rpc.Status in JSON, details included; the request_id of a mutating call ({@code
     * requestId}; null for a read) is added as a google.rpc.RequestInfo detail, and the hint for an unreachable
     * gateway as a google.rpc.LocalizedMessage, so that the output stays one JSON document.
     */
    static String json(StatusRuntimeException error, String target, String requestId) {
        com.google.rpc.Status details = StatusProto.fromThrowable(error);
        if (details == null) {
            details = com.google.rpc.Status.newBuilder()
                    .setCode(error.getStatus().getCode().value())
                    .setMessage(String.valueOf(error.getStatus().getDescription()))
                    .build();
        }
        if (requestId != null) {
            details = details.toBuilder()
                    .addDetails(Any.pack(
                            RequestInfo.newBuilder().setRequestId(requestId).build()))
                    .build();
        }
        Optional<String> hint = connectionHint(error, target);
        if (hint.isPresent()) {
            details = details.toBuilder()
                    .addDetails(Any.pack(LocalizedMessage.newBuilder()
                            .setLocale("en")
                            .setMessage(hint.get())
                            .build()))
                    .build();
        }
        return Printer.toJson(JsonFormat.printer().usingTypeRegistry(DETAIL_TYPES), details) + "\n";
    }

    /** Appends one detail. The field an ErrorInfo names in its metadata is left to the BadRequest, if there is one. */
    private static void appendDetail(StringBuilder text, Any detail, boolean fieldViolations) {
        try {
            if (detail.is(ErrorInfo.class)) {
                ErrorInfo info = detail.unpack(ErrorInfo.class);
                text.append("  reason: ").append(info.getReason());
                if (!info.getDomain().isEmpty()) {
                    text.append(" (").append(info.getDomain()).append(')');
                }
                text.append('\n');
                new TreeMap<>(info.getMetadataMap()).forEach((key, value) -> {
                    if (!(fieldViolations && key.equals("field"))) {
                        text.append("  ").append(key).append(": ").append(value).append('\n');
                    }
                });
            } else if (detail.is(BadRequest.class)) {
                for (BadRequest.FieldViolation violation :
                        detail.unpack(BadRequest.class).getFieldViolationsList()) {
                    text.append("  field: ").append(violation.getField());
                    String description = violation.getDescription();
                    if (description.startsWith(violation.getField() + ":")) {
                        description = description
                                .substring(violation.getField().length() + 1)
                                .strip();
                    }
                    if (!description.isEmpty()) {
                        text.append(": ").append(description);
                    }
                    text.append('\n');
                }
            } else if (detail.is(PreconditionFailure.class)) {
                for (PreconditionFailure.Violation violation :
                        detail.unpack(PreconditionFailure.class).getViolationsList()) {
                    text.append("  precondition: ")
                            .append(violation.getType())
                            .append(' ')
                            .append(violation.getSubject())
                            .append(": ")
                            .append(violation.getDescription())
                            .append('\n');
                }
            } else if (detail.is(RetryInfo.class)) {
                text.append("  retry after: ")
                        .append(detail.unpack(RetryInfo.class).getRetryDelay().getSeconds())
                        .append("s\n");
            }
        } catch (InvalidProtocolBufferException e) {
            text.append("  (an unreadable error detail of type ")
                    .append(detail.getTypeUrl())
                    .append(")\n");
        }
    }
}
