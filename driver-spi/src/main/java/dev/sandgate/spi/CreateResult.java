package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

/**
 * The answer to {@link ComputeDriver#create}.
 *
 * @param observation the sandbox as it is now
 * @param created true if this call created the resource; false if an identical one (same id, generation and policy
 *     digest) already existed
 */
public record CreateResult(SandboxObservation observation, boolean created) {
    public CreateResult {
        requireNonNull(observation, "observation is null");
    }
}
