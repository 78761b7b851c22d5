package dev.sandgate.spi;

/**
 * The {@link java.util.ServiceLoader} entry of a driver module: list the implementation in {@code
 * META-INF/services/dev.sandgate.spi.ComputeDriverProvider}.
 *
 * <p>The gateway selects a driver by {@link #name()} when configured to, and otherwise the available provider with
 * the highest {@link #priority()} above 0; when none is available it reports every candidate with its {@link
 * Availability} reason.
 *
 * <p>Implementations must have a public no-argument constructor and be cheap to construct: no I/O before {@link
 * #availability} or {@link #create}.
 */
public interface ComputeDriverProvider {
    /** A short lowercase name, e.g. {@code docker}; unique among installed drivers. */
    String name();

    /**
     * Higher wins when the gateway picks a driver automatically. A driver that runs nothing real (the reference driver,
     * test fakes) returns 0 or less: the gateway then uses it only when it is named.
     */
    int priority();

    /**
     * Whether this driver can run with {@code config} on this machine (an engine socket answers, a binary exists).
     * Never throws; may do bounded I/O.
     */
    Availability availability(DriverSettings config);

    /**
     * Creates a driver. May throw {@link DriverException} with INVALID_ARGUMENT (a bad setting, named) or UNAVAILABLE
     * (the backend cannot be reached).
     */
    ComputeDriver create(DriverSettings config, DriverContext context);
}
