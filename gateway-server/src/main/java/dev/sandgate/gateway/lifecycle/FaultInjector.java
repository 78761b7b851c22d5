package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import java.util.Optional;

/**
 * Halts the process ({@link Runtime#halt}: no shutdown hooks, no flushing, like a crash) when the lifecycle reaches
 * the armed {@link FaultPoint}. The gateway builds an armed injector only when test faults are explicitly enabled.
 */
public final class FaultInjector {
    /** The exit status of a process halted at a fault point. */
    public static final int HALT_STATUS = 86;

    private static final FaultInjector DISABLED = new FaultInjector(Optional.empty());

    private final Optional<FaultPoint> armed;

    private FaultInjector(Optional<FaultPoint> armed) {
        this.armed = requireNonNull(armed, "armed is null");
    }

    public static FaultInjector disabled() {
        return DISABLED;
    }

    public static FaultInjector armed(FaultPoint point) {
        return new FaultInjector(Optional.of(requireNonNull(point, "point is null")));
    }

    public Optional<FaultPoint> armedPoint() {
        return armed;
    }

    /** Halts the process if {@code point} is the armed one. */
    public void reached(FaultPoint point) {
        if (armed.isPresent() && armed.get() == point) {
            System.err.println("sandgate-gateway: test fault point " + point.externalName() + " reached; halting");
            System.err.flush();
            Runtime.getRuntime().halt(HALT_STATUS);
        }
    }
}
