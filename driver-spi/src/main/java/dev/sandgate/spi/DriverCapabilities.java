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
 * @param exec the driver runs commands in a running execution ({@link ComputeDriver#exec}); without it, exec is
 *     UNSUPPORTED
 * @param logs the driver reads an execution's output ({@link ComputeDriver#logs}); without it, logs are UNSUPPORTED
 */
public record DriverCapabilities(
        Set<PolicyField> enforceablePolicyFields,
        boolean launchPolicyOnStart,
        boolean persistentWorkspace,
        boolean exec,
        boolean logs) {
    public DriverCapabilities {
        enforceablePolicyFields =
                Set.copyOf(requireNonNull(enforceablePolicyFields, "enforceablePolicyFields is null"));
    }

    /** Capabilities without exec and logs. */
    public DriverCapabilities(
            Set<PolicyField> enforceablePolicyFields, boolean launchPolicyOnStart, boolean persistentWorkspace) {
        this(enforceablePolicyFields, launchPolicyOnStart, persistentWorkspace, false, false);
    }

    /** These capabilities with exec and logs as given. */
    public DriverCapabilities withExecAndLogs(boolean exec, boolean logs) {
        return new DriverCapabilities(enforceablePolicyFields, launchPolicyOnStart, persistentWorkspace, exec, logs);
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
