package dev.sandgate.conformance;

import static org.assertj.core.api.Assertions.fail;

import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.PolicyField;
import dev.sandgate.spi.StaticPolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The kit's check that a launch policy is in force: for every field the policy uses and the driver claims, the backend
 * must apply it. Flags and the network mode as asked; every capability asked dropped (a backend may drop more, or
 * report {@code ALL}); each limit exactly as asked, for the kit asks only values every backend can represent (whole
 * MiB, whole cores), so another value is the backend's default or a rounding, not the committed input.
 */
final class PolicyInForce {
    private PolicyInForce() {}

    static void assertInForce(LaunchPolicy asked, AppliedPolicy applied, Set<PolicyField> claimed, String when) {
        List<String> violations = violations(asked, applied, claimed);
        if (!violations.isEmpty()) {
            fail(
                    "the driver claims these policy fields in enforceablePolicyFields, but the backend does not apply them "
                            + when + " (read by the probe from the backend's own settings):\n  "
                            + String.join("\n  ", violations));
        }
    }

    /** One line per claimed field the policy uses that the backend applies more loosely than asked, or not at all. */
    static List<String> violations(LaunchPolicy asked, AppliedPolicy applied, Set<PolicyField> claimed) {
        StaticPolicy want = asked.staticPolicy();
        StaticPolicy have = applied.staticPolicy();
        var violations = new ArrayList<String>();
        for (PolicyField field : asked.usedFields()) {
            if (!claimed.contains(field)) {
                continue;
            }
            String problem = switch (field) {
                case READ_ONLY_ROOT_FILESYSTEM ->
                    have.readOnlyRootFilesystem() ? null : "the root filesystem is writable";
                case NETWORK_NONE ->
                    have.networkMode() == NetworkMode.NONE ? null : "network mode is " + have.networkMode();
                case DROP_CAPABILITIES -> {
                    var missing = new TreeSet<>(want.dropCapabilities());
                    missing.removeAll(have.dropCapabilities());
                    yield missing.isEmpty() || have.dropCapabilities().contains("ALL")
                            ? null
                            : "not dropped: " + missing + " (dropped: " + have.dropCapabilities() + ")";
                }
                case NO_NEW_PRIVILEGES -> have.noNewPrivileges() ? null : "processes may gain privileges";
                case MEMORY_LIMIT -> limit(want.memoryLimitBytes(), have.memoryLimitBytes(), "bytes");
                case CPU_LIMIT -> limit(want.cpuLimitMillis(), have.cpuLimitMillis(), "millicores");
                case PIDS_LIMIT -> limit(want.pidsLimit(), have.pidsLimit(), "processes");
                case NETWORK_ALLOW_LIST -> allowList(asked.dynamicPolicy().networkAllowList(), applied);
            };
            if (problem != null) {
                violations.add(field + ": " + problem);
            }
        }
        return violations;
    }

    private static String limit(long asked, long applied, String unit) {
        if (applied == asked) {
            return null;
        }
        return "asked " + asked + " " + unit + ", the backend applies " + (applied == 0 ? "no limit" : applied);
    }

    private static String allowList(List<String> asked, AppliedPolicy applied) {
        if (applied.staticPolicy().networkMode() == NetworkMode.NONE) {
            return null; // nothing is reachable, which satisfies any allow-list
        }
        List<String> have = applied.dynamicPolicy().networkAllowList();
        if (!have.isEmpty() && asked.containsAll(have)) {
            return null;
        }
        return "asked " + asked + ", the backend allows " + (have.isEmpty() ? "every destination" : have.toString());
    }
}
