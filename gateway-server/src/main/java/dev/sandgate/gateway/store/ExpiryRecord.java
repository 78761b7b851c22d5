package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Optional;

/**
 * A sandbox's expiry policy, fixed at create: what ends each of its executions without a client asking. Durations are
 * kept to the millisecond, the precision the store keeps.
 *
 * @param ttl each execution ends this long after its claim (create or start); empty: no TTL
 * @param idleTimeout each execution ends when it has not been renewed for this long; empty: no idle timeout
 * @param action what the gateway does to an expired execution
 */
public record ExpiryRecord(Optional<Duration> ttl, Optional<Duration> idleTimeout, Action action) {
    /** What the gateway does when an execution's lease expires. */
    public enum Action {
        /** Stop the execution; the workspace is kept. */
        STOP,
        /** Delete the sandbox and its workspace. */
        DELETE
    }

    public ExpiryRecord {
        requireNonNull(ttl, "ttl is null");
        requireNonNull(idleTimeout, "idleTimeout is null");
        requireNonNull(action, "action is null");
        if (ttl.isEmpty() && idleTimeout.isEmpty()) {
            throw new IllegalArgumentException("an expiry policy needs a ttl or an idle timeout");
        }
        ttl = ttl.map(d -> d.truncatedTo(ChronoUnit.MILLIS));
        idleTimeout = idleTimeout.map(d -> d.truncatedTo(ChronoUnit.MILLIS));
    }

    /** The lease of execution {@code generation}, claimed at {@code claimTime}: both deadlines run from the claim. */
    public LeaseRecord leaseFor(long generation, Instant claimTime) {
        Instant at = claimTime.truncatedTo(ChronoUnit.MILLIS);
        return new LeaseRecord(generation, ttl.map(at::plus), idleTimeout.map(at::plus), at, true);
    }
}
