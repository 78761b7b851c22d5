package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import java.time.Instant;

/**
 * What a driver (or the gateway itself) reported about one execution of a sandbox.
 *
 * @param generation the generation stamped on the runtime resource that produced it
 * @param runtimeState the SPI state name, or {@code MISSING} when the resource vanished
 * @param detail a short detail
 * @param time when it was observed
 * @param platformType for platform events, the backend's event type; empty otherwise
 */
public record Observation(long generation, String runtimeState, String detail, Instant time, String platformType) {
    public Observation {
        requireNonNull(runtimeState, "runtimeState is null");
        requireNonNull(detail, "detail is null");
        requireNonNull(time, "time is null");
        requireNonNull(platformType, "platformType is null");
    }
}
