package dev.sandgate.driver.container;

import com.github.dockerjava.api.command.PullImageResultCallback;
import java.io.IOException;
import java.util.Optional;

/**
 * docker-java's pull callback, except that a failed request is kept for the driver to report (as a {@link
 * dev.sandgate.spi.DriverException} with the engine's reason) instead of being logged at ERROR by docker-java.
 */
public class PullCallback extends PullImageResultCallback {
    private volatile Throwable failure;

    @Override
    public void onError(Throwable throwable) {
        if (failure == null) {
            failure = throwable;
        }
        try {
            close();
        } catch (IOException e) {
            // The stream is broken already; nothing more to release.
        }
    }

    /** Why the pull request failed, if it did. */
    public Optional<Throwable> failure() {
        return Optional.ofNullable(failure);
    }
}
