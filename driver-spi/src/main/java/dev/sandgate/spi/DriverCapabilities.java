package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

import java.util.EnumSet;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a driver can do. A "no" here is a promise too: the driver refuses the corresponding request with {@link
 * DriverErrorCode#UNSUPPORTED}, and the conformance kit checks that it does.
 *
 * @param enforceablePolicyFields the policy fields the driver enforces at launch
 * @param launchPolicyOnStart the driver can launch a new generation with a different launch policy than the previous
 *     execution had (without it, a start whose policy digest differs from the resource's is UNSUPPORTED)
 * @param persistentWorkspace data written to the workspace in one execution is there in the next
 */
public record DriverCapabilities(
        Set<PolicyField> enforceablePolicyFields, boolean launchPolicyOnStart, boolean persistentWorkspace) {
    public DriverCapabilities {
        enforceablePolicyFields =
                Set.copyOf(requireNonNull(enforceablePolicyFields, "enforceablePolicyFields is null"));
    }

    /** Refuses, with UNSUPPORTED naming the fields, a policy that uses fields this driver cannot enforce. */
    public void requireEnforceable(LaunchPolicy policy) {
        Set<PolicyField> missing = EnumSet.noneOf(PolicyField.class);
        missing.addAll(policy.usedFields());
        missing.removeAll(enforceablePolicyFields);
        if (!missing.isEmpty()) {
            throw new DriverException(
                    DriverErrorCode.UNSUPPORTED, "this driver cannot enforce policy fields " + new TreeSet<>(missing));
        }
    }
}
