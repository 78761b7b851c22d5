package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

/**
 * The answer to {@link ComputeDriver#start}.
 *
 * @param observation the sandbox as it is now
 * @param launched true if this call launched (or relaunched) the execution; false if it was already running at the
 *     requested generation
 */
public record StartResult(SandboxObservation observation, boolean launched) {
    public StartResult {
        requireNonNull(observation, "observation is null");
    }
}
