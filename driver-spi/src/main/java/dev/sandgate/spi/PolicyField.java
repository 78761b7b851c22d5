package dev.sandgate.spi;

import java.util.EnumSet;
import java.util.Set;

/**
 * The policy fields a driver may or may not be able to enforce. A launch policy "uses" a field when it asks for more
 * than the unrestricted value; a driver refuses a launch that uses a field missing from {@link
 * DriverCapabilities#enforceablePolicyFields()} with {@link DriverErrorCode#UNSUPPORTED}, before touching anything.
 */
public enum PolicyField {
    READ_ONLY_ROOT_FILESYSTEM,
    NETWORK_NONE,
    DROP_CAPABILITIES,
    NO_NEW_PRIVILEGES,
    MEMORY_LIMIT,
    CPU_LIMIT,
    PIDS_LIMIT,
    /** A non-empty allow-list under {@link NetworkMode#DEFAULT}. */
    NETWORK_ALLOW_LIST;

    /** The fields {@code policy} uses. */
    public static Set<PolicyField> usedBy(StaticPolicy policy, DynamicPolicy dynamic) {
        Set<PolicyField> used = EnumSet.noneOf(PolicyField.class);
        if (policy.readOnlyRootFilesystem()) {
            used.add(READ_ONLY_ROOT_FILESYSTEM);
        }
        if (policy.networkMode() == NetworkMode.NONE) {
            used.add(NETWORK_NONE);
        }
        if (!policy.dropCapabilities().isEmpty()) {
            used.add(DROP_CAPABILITIES);
        }
        if (policy.noNewPrivileges()) {
            used.add(NO_NEW_PRIVILEGES);
        }
        if (policy.memoryLimitBytes() > 0) {
            used.add(MEMORY_LIMIT);
        }
        if (policy.cpuLimitMillis() > 0) {
            used.add(CPU_LIMIT);
        }
        if (policy.pidsLimit() > 0) {
            used.add(PIDS_LIMIT);
        }
        if (policy.networkMode() == NetworkMode.DEFAULT
                && !dynamic.networkAllowList().isEmpty()) {
            used.add(NETWORK_ALLOW_LIST);
        }
        return used;
    }
}
