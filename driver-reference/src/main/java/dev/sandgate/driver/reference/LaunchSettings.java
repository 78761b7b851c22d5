package dev.sandgate.driver.reference;

import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.StaticPolicy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The restrictions one execution of the directory backend runs with, as flat settings in its resource's record. The
 * reference backend runs nothing, so applying a policy means recording it here, where {@link StoredResource#settings()}
 * reports it: what a container's host config is to Docker. Every launch (create, start) writes a new set.
 */
public final class LaunchSettings {
    public static final String READ_ONLY_ROOT_FILESYSTEM = "read-only-root-filesystem";
    public static final String NETWORK_MODE = "network-mode";
    public static final String DROP_CAPABILITIES = "drop-capabilities";
    public static final String NO_NEW_PRIVILEGES = "no-new-privileges";
    public static final String MEMORY_LIMIT_BYTES = "memory-limit-bytes";
    public static final String CPU_LIMIT_MILLIS = "cpu-limit-millis";
    public static final String PIDS_LIMIT = "pids-limit";
    /** Followed by {@code .count} and {@code .0}, {@code .1}, ... */
    public static final String NETWORK_ALLOW_LIST = "network-allow-list";

    private LaunchSettings() {}

    /** The settings that apply {@code policy}. */
    public static Map<String, String> of(LaunchPolicy policy) {
        StaticPolicy restrictions = policy.staticPolicy();
        var settings = new TreeMap<String, String>();
        settings.put(READ_ONLY_ROOT_FILESYSTEM, Boolean.toString(restrictions.readOnlyRootFilesystem()));
        settings.put(NETWORK_MODE, restrictions.networkMode().name());
        settings.put(DROP_CAPABILITIES, String.join(",", restrictions.dropCapabilities()));
        settings.put(NO_NEW_PRIVILEGES, Boolean.toString(restrictions.noNewPrivileges()));
        settings.put(MEMORY_LIMIT_BYTES, Long.toString(restrictions.memoryLimitBytes()));
        settings.put(CPU_LIMIT_MILLIS, Long.toString(restrictions.cpuLimitMillis()));
        settings.put(PIDS_LIMIT, Long.toString(restrictions.pidsLimit()));
        List<String> allowList = policy.dynamicPolicy().networkAllowList();
        settings.put(NETWORK_ALLOW_LIST + ".count", Integer.toString(allowList.size()));
        for (int i = 0; i < allowList.size(); i++) {
            settings.put(NETWORK_ALLOW_LIST + "." + i, allowList.get(i));
        }
        return settings;
    }

    /** The static restrictions {@code settings} apply; a missing setting is unrestricted. */
    public static StaticPolicy staticPolicy(Map<String, String> settings) {
        String capabilities = settings.getOrDefault(DROP_CAPABILITIES, "");
        return new StaticPolicy(
                Boolean.parseBoolean(settings.get(READ_ONLY_ROOT_FILESYSTEM)),
                NetworkMode.valueOf(settings.getOrDefault(NETWORK_MODE, NetworkMode.DEFAULT.name())),
                capabilities.isEmpty() ? Set.of() : Set.copyOf(Arrays.asList(capabilities.split(","))),
                Boolean.parseBoolean(settings.get(NO_NEW_PRIVILEGES)),
                Long.parseLong(settings.getOrDefault(MEMORY_LIMIT_BYTES, "0")),
                Long.parseLong(settings.getOrDefault(CPU_LIMIT_MILLIS, "0")),
                Long.parseLong(settings.getOrDefault(PIDS_LIMIT, "0")));
    }

    /** The allow-list {@code settings} apply; empty when none. */
    public static DynamicPolicy dynamicPolicy(Map<String, String> settings) {
        int count = Integer.parseInt(settings.getOrDefault(NETWORK_ALLOW_LIST + ".count", "0"));
        var allowList = new ArrayList<String>(count);
        for (int i = 0; i < count; i++) {
            allowList.add(settings.get(NETWORK_ALLOW_LIST + "." + i));
        }
        return new DynamicPolicy(allowList);
    }
}
