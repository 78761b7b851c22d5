package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import java.time.Duration;

/**
 * Tuning of the lifecycle.
 *
 * @param driverTimeout how long one driver call may take before the transition is left pending for recovery
 * @param requestRetention how long idempotency records are kept after their request finished
 * @param defaultWait how long an operation waits for a busy sandbox when the caller set no deadline
 * @param maxRetryBackoff the longest pause between automatic retries of a pending transition
 */
public record LifecycleSettings(
        Duration driverTimeout, Duration requestRetention, Duration defaultWait, Duration maxRetryBackoff) {
    public static final LifecycleSettings DEFAULTS = new LifecycleSettings(
            Duration.ofMinutes(2), Duration.ofHours(24), Duration.ofSeconds(30), Duration.ofMinutes(1));

    public LifecycleSettings {
        requireNonNull(driverTimeout, "driverTimeout is null");
        requireNonNull(requestRetention, "requestRetention is null");
        requireNonNull(defaultWait, "defaultWait is null");
        requireNonNull(maxRetryBackoff, "maxRetryBackoff is null");
        for (Duration d : new Duration[] {driverTimeout, requestRetention, defaultWait, maxRetryBackoff}) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("lifecycle durations must be positive");
            }
        }
    }

    public LifecycleSettings withDriverTimeout(Duration value) {
        return new LifecycleSettings(value, requestRetention, defaultWait, maxRetryBackoff);
    }

    public LifecycleSettings withRequestRetention(Duration value) {
        return new LifecycleSettings(driverTimeout, value, defaultWait, maxRetryBackoff);
    }

    public LifecycleSettings withMaxRetryBackoff(Duration value) {
        return new LifecycleSettings(driverTimeout, requestRetention, defaultWait, value);
    }
}
