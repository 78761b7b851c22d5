package dev.sandgate.gateway.lifecycle;

import java.util.Arrays;
import java.util.Optional;

/**
 * The places where a test can make the gateway process halt, to prove that recovery after a crash at that point
 * leaves nothing duplicated, orphaned or lost. Reachable only through {@link FaultInjector}, which the gateway arms
 * only when test faults were explicitly enabled at start-up.
 */
public enum FaultPoint {
    CREATE_AFTER_INTENT("create.after-intent"),
    CREATE_AFTER_DRIVER("create.after-driver"),
    STOP_AFTER_INTENT("stop.after-intent"),
    STOP_AFTER_DRIVER("stop.after-driver"),
    START_AFTER_INTENT("start.after-intent"),
    START_AFTER_DRIVER("start.after-driver"),
    DELETE_AFTER_INTENT("delete.after-intent"),
    DELETE_AFTER_DRIVER("delete.after-driver");

    private final String externalName;

    FaultPoint(String externalName) {
        this.externalName = externalName;
    }

    /** The name used on the command line and in the environment, e.g. {@code stop.after-intent}. */
    public String externalName() {
        return externalName;
    }

    public static Optional<FaultPoint> byExternalName(String name) {
        return Arrays.stream(values()).filter(p -> p.externalName.equals(name)).findFirst();
    }
}
