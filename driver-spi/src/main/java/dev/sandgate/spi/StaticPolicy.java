package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The part of a launch policy applied when an execution starts; it cannot change while the execution runs.
 *
 * @param readOnlyRootFilesystem the root filesystem is mounted read-only (the workspace stays writable)
 * @param networkMode the network the sandbox gets
 * @param dropCapabilities Linux capabilities to drop, upper case without {@code CAP_} (e.g. {@code NET_RAW}), or
 *     {@code ALL}
 * @param noNewPrivileges processes cannot gain privileges (setuid, file capabilities)
 * @param memoryLimitBytes memory limit in bytes; 0 means no limit
 * @param cpuLimitMillis CPU limit in thousandths of a core; 0 means no limit
 * @param pidsLimit maximum number of processes; 0 means no limit
 */
public record StaticPolicy(
        boolean readOnlyRootFilesystem,
        NetworkMode networkMode,
        Set<String> dropCapabilities,
        boolean noNewPrivileges,
        long memoryLimitBytes,
        long cpuLimitMillis,
        long pidsLimit) {
    /** The gateway's default: network none, everything else unrestricted. */
    public static final StaticPolicy DEFAULT = new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, 0, 0, 0);

    private static final Pattern CAPABILITY = Pattern.compile("[A-Z][A-Z_]{1,31}");

    public StaticPolicy {
        requireNonNull(networkMode, "networkMode is null");
        dropCapabilities = Set.copyOf(new TreeSet<>(requireNonNull(dropCapabilities, "dropCapabilities is null")));
        for (String capability : dropCapabilities) {
            if (!CAPABILITY.matcher(capability).matches() || capability.startsWith("CAP_")) {
                throw DriverException.invalidArgument(
                        "policy.static.drop_capabilities",
                        "'" + capability + "' is not a capability name (upper case, without CAP_, or ALL)");
            }
        }
        if (memoryLimitBytes < 0) {
            throw DriverException.invalidArgument("policy.static.memory_limit_bytes", "must not be negative");
        }
        if (cpuLimitMillis < 0) {
            throw DriverException.invalidArgument("policy.static.cpu_limit_millis", "must not be negative");
        }
        if (pidsLimit < 0) {
            throw DriverException.invalidArgument("policy.static.pids_limit", "must not be negative");
        }
    }
}
