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
    void aPullTheRegistryCannotServeIsAnInvalidImageOtherwiseUnavailable() {
        DriverException missing = EngineErrors.pullFailed(
                "example.org/absent:1", new NotFoundException("{\"message\":\"manifest unknown\"}"));
        DriverException unreachable = EngineErrors.pullFailed(
                "example.org/absent:1", new DockerClientException("Could not pull image: connection refused"));

        assertThat(missing.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(missing.getMessage())
                .isEqualTo("image 'example.org/absent:1' is not on the engine and pulling it failed: manifest unknown");
        assertThat(unreachable.code()).isEqualTo(DriverErrorCode.UNAVAILABLE);
        assertThat(unreachable.getMessage()).endsWith("pulling it failed: connection refused");
    }
}
