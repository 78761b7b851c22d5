package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.time.Instant;

/**
 * An armed lease as the expiry loop reads it, by its due time (an indexed column), without the rest of the sandbox.
 *
 * @param sandboxId the sandbox
 * @param generation the execution the lease belongs to
 * @param due when the gateway acts on it ({@link LeaseRecord#due()})
 */
public record DueLease(String sandboxId, long generation, Instant due) {
    public DueLease {
        requireNonNull(sandboxId, "sandboxId is null");
        requireNonNull(due, "due is null");
    }
}
