package dev.sandgate.driver.remote;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.rpc.ErrorInfo;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Mismatch;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class DriverErrorsTest {
    @ParameterizedTest
    @EnumSource(DriverErrorCode.class)
    void everyCodeCrossesTheWireByNameWithItsMessage(DriverErrorCode code) {
        var error = new DriverException(code, "what happened");

        DriverException received = DriverErrors.fromThrowable(DriverErrors.toStatus(error), "call");

        assertThat(received.code()).isEqualTo(code);
        assertThat(received.getMessage()).isEqualTo("what happened");
    }

    @Test
    void mismatchesOfAFailedPreconditionCrossTheWire() {
        var error = new DriverException(
                DriverErrorCode.FAILED_PRECONDITION,
                "sandbox is elsewhere",
                List.of(new Mismatch(Mismatch.WORKSPACE, "a", "b"), new Mismatch(Mismatch.GENERATION, "2", "3")),
                null);

        DriverException received = DriverErrors.fromThrowable(DriverErrors.toStatus(error), "call");

        assertThat(received.mismatches()).containsExactlyElementsOf(error.mismatches());
    }

    @Test
    void aCodeNameThisSideDoesNotKnowIsReadFromTheGrpcStatusCode() {
        var status = com.google.rpc.Status.newBuilder()
                .setCode(Status.Code.NOT_FOUND.value())
                .setMessage("gone for good")
                .addDetails(Any.pack(ErrorInfo.newBuilder()
                        .setDomain(DriverErrors.DOMAIN)
                        .setReason("A_CODE_FROM_A_NEWER_SPI")
                        .build()))
                .build();

        DriverException received = DriverErrors.fromThrowable(StatusProto.toStatusRuntimeException(status), "get");

        assertThat(received.code()).isEqualTo(DriverErrorCode.NOT_FOUND);
        assertThat(received.getMessage()).contains("gone for good");
    }

    @Test
    void aConnectionThatBrokeWithoutTheDriversAnswerIsUnavailable() {
        DriverException received = DriverErrors.fromThrowable(
                Status.UNAVAILABLE.withDescription("io exception").asRuntimeException(), "remote driver, stop");

        assertThat(received.code()).isEqualTo(DriverErrorCode.UNAVAILABLE);
        assertThat(received.getMessage()).isEqualTo("remote driver, stop: io exception");
    }

    @Test
    void aDeadlineThatPassedIsDeadlineExceeded() {
        DriverException received =
                DriverErrors.fromThrowable(Status.DEADLINE_EXCEEDED.asRuntimeException(), "remote driver, start");

        assertThat(received.code()).isEqualTo(DriverErrorCode.DEADLINE_EXCEEDED);
    }
}
