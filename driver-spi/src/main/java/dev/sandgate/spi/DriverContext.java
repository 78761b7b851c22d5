package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

import java.time.Clock;

/**
 * What the gateway offers a driver.
 *
 * @param gatewayId this gateway's id. A driver stamps it on everything it creates, and {@link ComputeDriver#list},
 *     {@link ComputeDriver#watch} and every lookup see only resources carrying it, so that several gateways (or test
 *     classes) can share one backend.
 * @param clock the clock to use for timestamps and deadlines
 * @param mutationHook called before each mutation of a resolved resource (see {@link MutationHook})
 */
public record DriverContext(String gatewayId, Clock clock, MutationHook mutationHook) {
    public DriverContext {
        Identifiers.requireDnsLabel("context.gateway_id", gatewayId, Identifiers.MAX_GATEWAY_ID_LENGTH);
        requireNonNull(clock, "clock is null");
        requireNonNull(mutationHook, "mutationHook is null");
    }

    public static DriverContext of(String gatewayId) {
        return new DriverContext(gatewayId, Clock.systemUTC(), MutationHook.NONE);
    }
}
