package dev.sandgate.driver.toolkit;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.io.UncheckedIOException;
import java.util.function.Supplier;

/**
 * The error rule of a driver that keeps its state in files, applied once at the SPI boundary: a file system failure
 * is UNAVAILABLE (retryable: the disk or the directory may come back), a record that cannot be read as one is
 * INTERNAL (retrying does not help). Anything else passes through unchanged.
 */
public final class FileBoundary {
    private final String what;

    /** @param what the state's name in messages, such as "the reference directory" */
    public FileBoundary(String what) {
        this.what = requireNonNull(what, "what is null");
    }

    /** Runs {@code call}, mapping its failures as the class comment says. */
    public <T> T call(Supplier<T> call) {
        try {
            return call.get();
        } catch (UncheckedIOException e) {
            throw new DriverException(DriverErrorCode.UNAVAILABLE, what + " failed: " + e.getMessage(), e);
        } catch (IllegalStateException | IllegalArgumentException e) {
            throw new DriverException(DriverErrorCode.INTERNAL, what + " is inconsistent: " + e.getMessage(), e);
        }
    }
}
