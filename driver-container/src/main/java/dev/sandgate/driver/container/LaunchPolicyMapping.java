package dev.sandgate.driver.container;

import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.Volume;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.PolicyField;
import dev.sandgate.spi.StaticPolicy;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * How a launch policy becomes container settings, visible in the engine's inspect output:
 *
 * <table>
 *   <caption>Policy field to container setting</caption>
 *   <tr><th>policy</th><th>HostConfig</th></tr>
 *   <tr><td>read-only root filesystem</td><td>{@code ReadonlyRootfs: true} (the workspace volume stays writable)</td></tr>
 *   <tr><td>network none / default</td><td>{@code NetworkMode: none} / {@code default} (the engine's default network)</td></tr>
 *   <tr><td>dropped capabilities</td><td>{@code CapDrop}</td></tr>
 *   <tr><td>no new privileges</td><td>{@code SecurityOpt: ["no-new-privileges"]}</td></tr>
 *   <tr><td>memory limit</td><td>{@code Memory} (bytes, at least 6 MiB)</td></tr>
 *   <tr><td>CPU limit</td><td>{@code NanoCpus} (millicores x 10^6)</td></tr>
 *   <tr><td>pids limit</td><td>{@code PidsLimit}</td></tr>
 * </table>
 *
 * Every container also gets {@code Init: true} (the engine's init, tini or catatonit, runs as PID 1 and forwards
 * SIGTERM) and the sandbox's workspace volume at {@link ContainerNaming#WORKSPACE_PATH}. A network allow-list is not
 * enforced by these drivers: a policy using it is refused as UNSUPPORTED.
 */
final class LaunchPolicyMapping {
    /** The engines refuse smaller memory limits. */
    static final long MIN_MEMORY_BYTES = 6L * 1024 * 1024;

    static final DriverCapabilities CAPABILITIES = new DriverCapabilities(
            EnumSet.of(
                    PolicyField.READ_ONLY_ROOT_FILESYSTEM,
                    PolicyField.NETWORK_NONE,
                    PolicyField.DROP_CAPABILITIES,
                    PolicyField.NO_NEW_PRIVILEGES,
                    PolicyField.MEMORY_LIMIT,
                    PolicyField.CPU_LIMIT,
                    PolicyField.PIDS_LIMIT),
            true,
            true);

    /** The limits a rootless engine on cgroup v1 cannot apply (Podman and Docker ignore them with a warning). */
    static final Set<PolicyField> CGROUP_LIMITS =
            EnumSet.of(PolicyField.MEMORY_LIMIT, PolicyField.CPU_LIMIT, PolicyField.PIDS_LIMIT);

    /**
     * What the drivers can enforce on an engine: everything but the network allow-list, and not the cgroup limits
     * where the engine runs rootless on cgroup v1, because it would create the container without them.
     *
     * @param securityOptions the engine's {@code SecurityOptions} from {@code /info} ({@code name=rootless} for a
     *     rootless engine)
     * @param cgroupVersion the engine's {@code CgroupVersion} from {@code /info}
     */
    static DriverCapabilities capabilities(List<String> securityOptions, String cgroupVersion) {
        boolean rootless = securityOptions != null
                && securityOptions.stream().anyMatch(option -> option.startsWith("name=rootless"));
        if (!rootless || !"1".equals(cgroupVersion)) {
            return CAPABILITIES;
        }
        Set<PolicyField> fields = EnumSet.copyOf(CAPABILITIES.enforceablePolicyFields());
        fields.removeAll(CGROUP_LIMITS);
        return new DriverCapabilities(fields, CAPABILITIES.launchPolicyOnStart(), CAPABILITIES.persistentWorkspace());
    }

    private LaunchPolicyMapping() {}

    /**
     * Refuses what the engine cannot apply, before anything is created: INVALID_ARGUMENT for a memory limit below
     * the engines' minimum, UNSUPPORTED for a capability docker-java cannot name.
     */
    static void requireApplicable(StaticPolicy policy) {
        if (policy.memoryLimitBytes() > 0 && policy.memoryLimitBytes() < MIN_MEMORY_BYTES) {
            throw DriverException.invalidArgument(
                    "policy.static.memory_limit_bytes",
                    "container engines need at least " + MIN_MEMORY_BYTES + " bytes (6 MiB), got "
                            + policy.memoryLimitBytes());
        }
        capabilities(policy);
    }

    /** The host configuration of a container launched under {@code policy} on workspace volume {@code volumeName}. */
    static HostConfig hostConfig(StaticPolicy policy, String volumeName) {
        HostConfig hostConfig = HostConfig.newHostConfig()
                .withInit(true)
                .withBinds(new Bind(volumeName, new Volume(ContainerNaming.WORKSPACE_PATH)))
                .withNetworkMode(networkMode(policy))
                .withReadonlyRootfs(policy.readOnlyRootFilesystem());
        List<Capability> drop = capabilities(policy);
        if (!drop.isEmpty()) {
            hostConfig.withCapDrop(drop.toArray(Capability[]::new));
        }
        if (policy.noNewPrivileges()) {
            hostConfig.withSecurityOpts(List.of("no-new-privileges"));
        }
        if (policy.memoryLimitBytes() > 0) {
            hostConfig.withMemory(policy.memoryLimitBytes());
        }
        if (policy.cpuLimitMillis() > 0) {
            hostConfig.withNanoCPUs(Math.multiplyExact(policy.cpuLimitMillis(), 1_000_000L));
        }
        if (policy.pidsLimit() > 0) {
            hostConfig.withPidsLimit(policy.pidsLimit());
        }
        return hostConfig;
    }

    private static String networkMode(StaticPolicy policy) {
        return switch (policy.networkMode()) {
            case NONE -> "none";
            case DEFAULT -> "default";
        };
    }

    private static List<Capability> capabilities(StaticPolicy policy) {
        List<Capability> result = new ArrayList<>();
        for (String name : policy.dropCapabilities()) {
            try {
                result.add(Capability.valueOf(name));
            } catch (IllegalArgumentException e) {
                throw new DriverException(
                        DriverErrorCode.UNSUPPORTED,
                        "this driver cannot drop capability '" + name + "': the container engine client does not"
                                + " know it");
            }
        }
        return result;
    }
}
