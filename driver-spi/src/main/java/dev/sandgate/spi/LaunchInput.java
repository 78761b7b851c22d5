package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

/**
 * The committed input of one execution: its generation and the policy captured for it.
 *
 * <p>Only the gateway mints generations: 1 at create, +1 for every start it claims, never reused, even after a failed
 * launch. A driver stamps the generation and the policy digest on the runtime resource and reports them in every
 * observation. Every retry of a generation, and every recovery after a gateway restart, hands the driver exactly the
 * same input.
 *
 * @param generation the execution generation, at least 1
 * @param policy the policy captured for this execution
 */
public record LaunchInput(long generation, LaunchPolicy policy) {
    public LaunchInput {
        if (generation < 1) {
            throw DriverException.invalidArgument("launch.generation", "must be at least 1");
        }
        requireNonNull(policy, "policy is null");
    }
}
