package dev.sandgate.driver.container;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.dockerjava.api.exception.BadRequestException;
import com.github.dockerjava.api.exception.ConflictException;
import com.github.dockerjava.api.exception.DockerClientException;
import com.github.dockerjava.api.exception.InternalServerErrorException;
import com.github.dockerjava.api.exception.NotFoundException;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.io.IOException;
import java.net.SocketTimeoutException;
import org.junit.jupiter.api.Test;

class EngineErrorsTest {
    @Test
    void engineAnswersMapToDriverCodes() {
        assertThat(EngineErrors.map(new NotFoundException("x"), "a").code()).isEqualTo(DriverErrorCode.NOT_FOUND);
        assertThat(EngineErrors.map(new ConflictException("x"), "a").code()).isEqualTo(DriverErrorCode.ABORTED);
        assertThat(EngineErrors.map(new BadRequestException("x"), "a").code())
                .isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(EngineErrors.map(new InternalServerErrorException("x"), "a").code())
                .isEqualTo(DriverErrorCode.INTERNAL);
    }

    @Test
    void anUnreachableEngineIsUnavailableAndASilentOneIsADeadline() {
        var refused = new RuntimeException(new IOException("Connection refused"));
        var silent = new RuntimeException(new SocketTimeoutException("Read timed out"));

        assertThat(EngineErrors.map(refused, "a").code()).isEqualTo(DriverErrorCode.UNAVAILABLE);
        assertThat(EngineErrors.map(silent, "a").code()).isEqualTo(DriverErrorCode.DEADLINE_EXCEEDED);
    }

    @Test
    void theMessageNamesTheActionAndTheEnginesOwnReason() {
        var notFound = new NotFoundException("{\"message\":\"No such container: 3f2a\"}\n");

        DriverException mapped = EngineErrors.map(notFound, "stopping container 3f2a");

        assertThat(mapped.getMessage()).isEqualTo("stopping container 3f2a: No such container: 3f2a");
        assertThat(mapped.getCause()).isSameAs(notFound);
    }

    @Test
    void aDriverExceptionPassesThroughUnchanged() {
        var original = new DriverException(DriverErrorCode.FAILED_PRECONDITION, "kept");

        assertThat(EngineErrors.map(original, "a")).isSameAs(original);
    }

    @Test
    void aPullTheEngineRefusesIsAPermanentInvalidImageAndOnlyAnUnreachableEngineIsTransient() {
        DriverException missing = EngineErrors.pullFailed(
                "example.org/absent:1", new NotFoundException("{\"message\":\"manifest unknown\"}"));
        DriverException registryDown = EngineErrors.pullFailed(
                "127.0.0.1:1/x:1",
                new InternalServerErrorException(
                        "Status 500: {\"message\":\"Get \\\"http://127.0.0.1:1/v2/\\\": connection refused\"}"));
        DriverException streamError = EngineErrors.pullFailed(
                "example.org/absent:1", new DockerClientException("Could not pull image: connection refused"));
        DriverException engineUnreachable = EngineErrors.pullFailed(
                "example.org/absent:1", new RuntimeException(new java.net.ConnectException("no socket")));

        assertThat(missing.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(missing.getMessage())
                .isEqualTo("spec.image: image 'example.org/absent:1' is not on the engine and pulling it failed:"
                        + " manifest unknown");
        assertThat(registryDown.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(registryDown.getMessage()).startsWith("spec.image: ").contains("connection refused");
        assertThat(streamError.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(streamError.getMessage()).endsWith("pulling it failed: connection refused");
        assertThat(engineUnreachable.code()).isEqualTo(DriverErrorCode.UNAVAILABLE);
        assertThat(engineUnreachable.code().isTransient()).isTrue();
    }
}
