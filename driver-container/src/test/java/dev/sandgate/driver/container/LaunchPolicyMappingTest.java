package dev.sandgate.driver.container;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.HostConfig;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.PolicyField;
import dev.sandgate.spi.StaticPolicy;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LaunchPolicyMappingTest {
    private static final long MIB = 1024L * 1024;

    @Test
    void everyContainerRunsUnderTheEnginesInitWithItsWorkspaceMounted() {
        HostConfig hostConfig = LaunchPolicyMapping.hostConfig(StaticPolicy.DEFAULT, "sandgate-x-workspace");

        assertThat(hostConfig.getInit()).isTrue();
        assertThat(hostConfig.getBinds()).singleElement().satisfies(bind -> {
            assertThat(bind.getPath()).isEqualTo("sandgate-x-workspace");
            assertThat(bind.getVolume().getPath()).isEqualTo(ContainerNaming.WORKSPACE_PATH);
        });
    }

    @Test
    void theDefaultPolicyMeansNetworkNoneAndNothingElse() {
        HostConfig hostConfig = LaunchPolicyMapping.hostConfig(StaticPolicy.DEFAULT, "v");

        assertThat(hostConfig.getNetworkMode()).isEqualTo("none");
        assertThat(hostConfig.getReadonlyRootfs()).isFalse();
        assertThat(hostConfig.getCapDrop()).isNull();
        assertThat(hostConfig.getSecurityOpts()).isNull();
        assertThat(hostConfig.getMemory()).isNull();
        assertThat(hostConfig.getNanoCPUs()).isNull();
        assertThat(hostConfig.getPidsLimit()).isNull();
    }

    @Test
    void everyStaticFieldMapsToItsContainerSetting() {
        var policy = new StaticPolicy(true, NetworkMode.DEFAULT, Set.of("NET_RAW", "ALL"), true, 64 * MIB, 1500, 100);

        HostConfig hostConfig = LaunchPolicyMapping.hostConfig(policy, "v");

        assertThat(hostConfig.getReadonlyRootfs()).isTrue();
        assertThat(hostConfig.getNetworkMode()).isEqualTo("default");
        assertThat(hostConfig.getCapDrop()).containsExactlyInAnyOrder(Capability.NET_RAW, Capability.ALL);
        assertThat(hostConfig.getSecurityOpts()).containsExactly("no-new-privileges");
        assertThat(hostConfig.getMemory()).isEqualTo(64 * MIB);
        assertThat(hostConfig.getNanoCPUs()).isEqualTo(1_500_000_000L);
        assertThat(hostConfig.getPidsLimit()).isEqualTo(100L);
    }

    @Test
    void theDriversEnforceEveryStaticFieldButNotTheNetworkAllowList() {
        assertThat(LaunchPolicyMapping.CAPABILITIES.enforceablePolicyFields())
                .containsExactlyInAnyOrder(
                        PolicyField.READ_ONLY_ROOT_FILESYSTEM,
                        PolicyField.NETWORK_NONE,
                        PolicyField.DROP_CAPABILITIES,
                        PolicyField.NO_NEW_PRIVILEGES,
                        PolicyField.MEMORY_LIMIT,
                        PolicyField.CPU_LIMIT,
                        PolicyField.PIDS_LIMIT);
        assertThat(LaunchPolicyMapping.CAPABILITIES.launchPolicyOnStart()).isTrue();
        assertThat(LaunchPolicyMapping.CAPABILITIES.persistentWorkspace()).isTrue();
    }

    @Test
    void aRootlessEngineOnCgroupV1CannotEnforceCgroupLimits() {
        var rootlessV1 =
                LaunchPolicyMapping.capabilities(List.of("name=seccomp,profile=default", "name=rootless"), "1");

        assertThat(rootlessV1.enforceablePolicyFields())
                .doesNotContain(PolicyField.MEMORY_LIMIT, PolicyField.CPU_LIMIT, PolicyField.PIDS_LIMIT)
                .contains(PolicyField.READ_ONLY_ROOT_FILESYSTEM, PolicyField.NETWORK_NONE);
        assertThat(LaunchPolicyMapping.capabilities(List.of("name=rootless"), "2"))
                .isEqualTo(LaunchPolicyMapping.CAPABILITIES);
        assertThat(LaunchPolicyMapping.capabilities(List.of("name=seccomp,profile=default"), "1"))
                .isEqualTo(LaunchPolicyMapping.CAPABILITIES);
        assertThat(LaunchPolicyMapping.capabilities(null, null)).isEqualTo(LaunchPolicyMapping.CAPABILITIES);
    }

    @Test
    void aMemoryLimitBelowTheEnginesMinimumIsInvalid() {
        var policy = new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, 6 * MIB - 1, 0, 0);

        DriverException refused =
                catchThrowableOfType(DriverException.class, () -> LaunchPolicyMapping.requireApplicable(policy));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(refused.getMessage()).startsWith("policy.static.memory_limit_bytes:");
        LaunchPolicyMapping.requireApplicable(
                new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, 6 * MIB, 0, 0));
    }

    @Test
    void aCapabilityTheEngineClientCannotNameIsUnsupported() {
        var policy = new StaticPolicy(false, NetworkMode.NONE, Set.of("NOT_A_CAPABILITY"), false, 0, 0, 0);

        DriverException refused =
                catchThrowableOfType(DriverException.class, () -> LaunchPolicyMapping.requireApplicable(policy));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.UNSUPPORTED);
        assertThat(refused.getMessage()).contains("NOT_A_CAPABILITY");
    }
}
