package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The lease of one execution of a sandbox with an {@link ExpiryRecord}: its deadlines, kept with the sandbox so that
 * they survive gateway restarts. Times are kept to the millisecond, the precision the store keeps.
 *
 * @param generation the execution the lease belongs to; its expiry never acts on another
 * @param ttlDeadline claim time + ttl; empty without a ttl
 * @param idleDeadline last renewal (or the claim) + idle timeout; empty without an idle timeout
 * @param renewTime the last renewal (the claim time until the first)
 * @param armed true until the gateway has acted on the lease's expiry (or found nothing to act on)
 */
public record LeaseRecord(
        long generation,
        Optional<Instant> ttlDeadline,
        Optional<Instant> idleDeadline,
        Instant renewTime,
        boolean armed) {
    public LeaseRecord {
        if (generation < 1) {
            throw new IllegalArgumentException("generation must be positive");
        }
        ttlDeadline = requireNonNull(ttlDeadline, "ttlDeadline is null").map(LeaseRecord::millis);
        idleDeadline = requireNonNull(idleDeadline, "idleDeadline is null").map(LeaseRecord::millis);
        renewTime = millis(requireNonNull(renewTime, "renewTime is null"));
        if (ttlDeadline.isEmpty() && idleDeadline.isEmpty()) {
            throw new IllegalArgumentException("a lease needs a ttl or an idle deadline");
        }
    }

    /** When the gateway acts on this lease: the earlier deadline while it is armed; empty once it has acted. */
    public Optional<Instant> due() {
        if (!armed) {
            return Optional.empty();
        }
        return Stream.of(ttlDeadline, idleDeadline).flatMap(Optional::stream).min(Instant::compareTo);
    }

    /** Which deadline {@link #due()} is: {@code "ttl"} or {@code "idle"} (the ttl when both fall together). */
    public String dueDeadline() {
        if (ttlDeadline.isEmpty()) {
            return "idle";
        }
        return idleDeadline.isPresent() && idleDeadline.get().isBefore(ttlDeadline.get()) ? "idle" : "ttl";
    }

    /** This lease renewed at {@code at}: the idle deadline moves to {@code at} + idle timeout, the ttl stays. */
    public LeaseRecord renewed(ExpiryRecord expiry, Instant at) {
        Instant now = millis(at);
        return new LeaseRecord(generation, ttlDeadline, expiry.idleTimeout().map(now::plus), now, armed);
    }

    /** This lease once the gateway has acted on its expiry. */
    public LeaseRecord disarmed() {
        return new LeaseRecord(generation, ttlDeadline, idleDeadline, renewTime, false);
    }

    private static Instant millis(Instant instant) {
        return instant.truncatedTo(ChronoUnit.MILLIS);
    }
}
