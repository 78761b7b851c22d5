package dev.sandgate.driver.toolkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.junit.jupiter.api.Test;

class FileBoundaryTest {
    private final FileBoundary boundary = new FileBoundary("the test directory");

    @Test
    void aFileSystemFailureIsUnavailable() {
        assertThatThrownBy(() -> boundary.call(() -> {
                    throw new UncheckedIOException(new IOException("disk gone"));
                }))
                .isInstanceOfSatisfying(
                        DriverException.class, e -> assertThat(e.code()).isEqualTo(DriverErrorCode.UNAVAILABLE))
                .hasMessageContaining("the test directory failed");
    }

    @Test
    void anUnreadableRecordIsInternal() {
        assertThatThrownBy(() -> boundary.call(() -> {
                    throw new IllegalArgumentException("bad record");
                }))
                .isInstanceOfSatisfying(
                        DriverException.class, e -> assertThat(e.code()).isEqualTo(DriverErrorCode.INTERNAL))
                .hasMessageContaining("the test directory is inconsistent");
    }

    @Test
    void aDriverExceptionAndAResultPassThrough() {
        DriverException notFound = new DriverException(DriverErrorCode.NOT_FOUND, "gone");

        assertThat(boundary.call(() -> "ok")).isEqualTo("ok");
        assertThatThrownBy(() -> boundary.call(() -> {
                    throw notFound;
                }))
                .isSameAs(notFound);
    }
}
