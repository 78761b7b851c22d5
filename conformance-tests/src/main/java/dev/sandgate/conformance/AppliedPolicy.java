package dev.sandgate.conformance;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.StaticPolicy;

/**
 * The restrictions a runtime resource runs with, as the backend itself reports them (a container's host config, a
 * pod's spec and the network policies selecting it, a VM process's arguments), read out of band by {@link
 * BackendProbe#appliedPolicy}. A restriction the backend does not apply is reported unrestricted: {@code false}, an
 * empty set or list, {@code 0}, {@link dev.sandgate.spi.NetworkMode#DEFAULT}.
 *
 * @param staticPolicy the launch restrictions of the resource's current execution
 * @param dynamicPolicy the network allow-list in force, empty when there is none
 */
public record AppliedPolicy(StaticPolicy staticPolicy, DynamicPolicy dynamicPolicy) {
    public AppliedPolicy {
        requireNonNull(staticPolicy, "staticPolicy is null");
        requireNonNull(dynamicPolicy, "dynamicPolicy is null");
    }

    /** Only static restrictions, no allow-list. */
    public static AppliedPolicy of(StaticPolicy staticPolicy) {
        return new AppliedPolicy(staticPolicy, DynamicPolicy.EMPTY);
    }
}
