package dev.sandgate.driver.remote;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Mismatch;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.ArrayList;
import java.util.List;

/**
 * The one place that maps a {@link DriverException} to a gRPC status and back (see "ERRORS" in {@code
 * sandgate/driver/v1/driver.proto}). The code travels by name in {@link ErrorInfo#getReason()}, so codes added to the
 * SPI cross the wire without a change here; the gRPC status code is for clients that do not know the name.
 */
public final class DriverErrors {
    /** The {@link ErrorInfo#getDomain()} of the driver contract's errors. */
    public static final String DOMAIN = "driver.sandgate.dev";

    /** The reason a server gives a client whose protocol version it does not speak. */
    public static final String PROTOCOL_MISMATCH = "PROTOCOL_MISMATCH";

    private DriverErrors() {}

    /** The status a server answers for {@code error}. */
    public static StatusRuntimeException toStatus(DriverException error) {
        var status = com.google.rpc.Status.newBuilder()
                .setCode(grpcCode(error.code()).value())
                .setMessage(error.getMessage())
                .addDetails(Any.pack(ErrorInfo.newBuilder()
                        .setDomain(DOMAIN)
                        .setReason(error.code().name())
                        .build()));
        for (Mismatch mismatch : error.mismatches()) {
            status.addDetails(Any.pack(dev.sandgate.driver.v1.Mismatch.newBuilder()
                    .setSubject(mismatch.subject())
                    .setExpected(mismatch.expected())
                    .setActual(mismatch.actual())
                    .build()));
        }
        return StatusProto.toStatusRuntimeException(status.build());
    }

    /** The gRPC status code of a driver error code: informative, clients read the name. */
    static Status.Code grpcCode(DriverErrorCode code) {
        return switch (code) {
            case INVALID_ARGUMENT -> Status.Code.INVALID_ARGUMENT;
            case NOT_FOUND -> Status.Code.NOT_FOUND;
            case ALREADY_EXISTS -> Status.Code.ALREADY_EXISTS;
            case FAILED_PRECONDITION -> Status.Code.FAILED_PRECONDITION;
            case UNSUPPORTED -> Status.Code.UNIMPLEMENTED;
            case ABORTED -> Status.Code.ABORTED;
            case UNAVAILABLE -> Status.Code.UNAVAILABLE;
            case DEADLINE_EXCEEDED -> Status.Code.DEADLINE_EXCEEDED;
            case INTERNAL -> Status.Code.INTERNAL;
        };
    }

    /**
     * The driver error a client raises for a failed call: the code named by the status's ErrorInfo, else one derived
     * from the gRPC status code (a transport failure: the driver process died, the deadline passed).
     */
    public static DriverException fromThrowable(Throwable failure, String what) {
        Status status = Status.fromThrowable(failure);
        com.google.rpc.Status details = StatusProto.fromThrowable(failure);
        String message = status.getDescription() != null
                ? status.getDescription()
                : status.getCode().name();
        DriverErrorCode code = null;
        List<Mismatch> mismatches = new ArrayList<>();
        if (details != null) {
            for (Any detail : details.getDetailsList()) {
                try {
                    if (detail.is(ErrorInfo.class)) {
                        ErrorInfo info = detail.unpack(ErrorInfo.class);
                        if (DOMAIN.equals(info.getDomain())) {
                            code = byName(info.getReason());
                        }
                    } else if (detail.is(dev.sandgate.driver.v1.Mismatch.class)) {
                        var mismatch = detail.unpack(dev.sandgate.driver.v1.Mismatch.class);
                        mismatches.add(
                                new Mismatch(mismatch.getSubject(), mismatch.getExpected(), mismatch.getActual()));
                    }
                } catch (InvalidProtocolBufferException e) {
                    // a malformed detail is ignored: the status code still says what happened
                }
            }
        }
        if (code == null) {
            code = fromGrpcCode(status.getCode());
            message = what + ": " + message;
        }
        return new DriverException(
                code, message, code == DriverErrorCode.FAILED_PRECONDITION ? mismatches : List.of(), failure);
    }

    private static DriverErrorCode byName(String name) {
        for (DriverErrorCode code : DriverErrorCode.values()) {
            if (code.name().equals(name)) {
                return code;
            }
        }
        return null;
    }

    private static DriverErrorCode fromGrpcCode(Status.Code code) {
        return switch (code) {
            case UNAVAILABLE, CANCELLED -> DriverErrorCode.UNAVAILABLE;
            case DEADLINE_EXCEEDED -> DriverErrorCode.DEADLINE_EXCEEDED;
            case INVALID_ARGUMENT -> DriverErrorCode.INVALID_ARGUMENT;
            case NOT_FOUND -> DriverErrorCode.NOT_FOUND;
            case ALREADY_EXISTS -> DriverErrorCode.ALREADY_EXISTS;
            case FAILED_PRECONDITION -> DriverErrorCode.FAILED_PRECONDITION;
            case UNIMPLEMENTED -> DriverErrorCode.UNSUPPORTED;
            case ABORTED -> DriverErrorCode.ABORTED;
            case OK,
                    UNKNOWN,
                    PERMISSION_DENIED,
                    RESOURCE_EXHAUSTED,
                    OUT_OF_RANGE,
                    INTERNAL,
                    DATA_LOSS,
                    UNAUTHENTICATED -> DriverErrorCode.INTERNAL;
        };
    }
}
