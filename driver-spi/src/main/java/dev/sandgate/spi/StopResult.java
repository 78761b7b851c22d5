package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

/**
 * The answer to {@link ComputeDriver#stop}.
 *
 * @param observation the sandbox as it is now (stopped)
 * @param stoppedNow true if this call stopped a running execution; false if it was already stopped
 */
public record StopResult(SandboxObservation observation, boolean stoppedNow) {
    public StopResult {
        requireNonNull(observation, "observation is null");
    }
}
