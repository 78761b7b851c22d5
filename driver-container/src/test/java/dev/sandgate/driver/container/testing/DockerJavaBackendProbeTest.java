package dev.sandgate.driver.container.testing;

import static dev.sandgate.driver.container.testing.DockerJavaBackendProbe.appliedStaticPolicy;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.HostConfig;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.StaticPolicy;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * How the probe reads a container's {@code HostConfig}, in the shapes Docker 20.10 and Podman 4.3 report it through the
 * Docker-compatible API (observed on both; the engine tests check the reading against the kernel).
 */
class DockerJavaBackendProbeTest {
    private static final long MIB = 1024L * 1024;

    @Test
    void dockerReportsThePolicyAsItWasAsked() {
        HostConfig docker = HostConfig.newHostConfig()
                .withReadonlyRootfs(true)
                .withNetworkMode("none")
                .withCapDrop(Capability.NET_RAW, Capability.SYS_ADMIN)
                .withSecurityOpts(List.of("no-new-privileges"))
                .withMemory(256 * MIB)
                .withNanoCPUs(1_000_000_000L)
                .withCpuQuota(0L)
                .withCpuPeriod(0L)
                .withPidsLimit(256L);

        StaticPolicy applied = appliedStaticPolicy(docker);

        assertThat(applied.readOnlyRootFilesystem()).isTrue();
        assertThat(applied.networkMode()).isEqualTo(NetworkMode.NONE);
        assertThat(applied.dropCapabilities()).contains("NET_RAW", "SYS_ADMIN").doesNotContain("CHOWN", "ALL");
        assertThat(applied.noNewPrivileges()).isTrue();
        assertThat(applied.memoryLimitBytes()).isEqualTo(256 * MIB);
        assertThat(applied.cpuLimitMillis()).isEqualTo(1000);
        assertThat(applied.pidsLimit()).isEqualTo(256);
    }

    @Test
    void podmanReportsCapabilitiesAgainstItsReferenceSetAndTheCpuLimitTwice() {
        // What Podman reported for CapDrop [NET_RAW, SYS_ADMIN]: SYS_ADMIN is not in its reference set, so it does
        // not appear, although the container runs without it.
        HostConfig podman = HostConfig.newHostConfig()
                .withReadonlyRootfs(true)
                .withNetworkMode("none")
                .withCapDrop(Capability.AUDIT_WRITE, Capability.MKNOD, Capability.NET_RAW)
                .withCapAdd()
                .withSecurityOpts(List.of("no-new-privileges"))
                .withMemory(256 * MIB)
                .withNanoCPUs(1_000_000_000L)
                .withCpuQuota(100_000L)
                .withCpuPeriod(100_000L)
                .withPidsLimit(256L);

        StaticPolicy applied = appliedStaticPolicy(podman);

        assertThat(applied.dropCapabilities())
                .contains("NET_RAW", "SYS_ADMIN", "MKNOD", "AUDIT_WRITE")
                .doesNotContain("CHOWN", "KILL", "ALL");
        assertThat(applied.cpuLimitMillis()).isEqualTo(1000);
        assertThat(applied.noNewPrivileges()).isTrue();
    }

    @Test
    void everyCapabilityDroppedIsAll() {
        Capability[] podmanAll = DockerJavaBackendProbe.ENGINE_DEFAULT_CAPABILITIES.stream()
                .map(Capability::valueOf)
                .toArray(Capability[]::new);

        assertThat(appliedStaticPolicy(HostConfig.newHostConfig().withCapDrop(Capability.ALL))
                        .dropCapabilities())
                .containsExactly("ALL");
        assertThat(appliedStaticPolicy(HostConfig.newHostConfig().withCapDrop(podmanAll))
                        .dropCapabilities())
                .containsExactly("ALL");
        assertThat(appliedStaticPolicy(HostConfig.newHostConfig()
                                .withCapDrop(Capability.ALL)
                                .withCapAdd(Capability.CHOWN))
                        .dropCapabilities())
                .contains("NET_RAW", "SYS_ADMIN")
                .doesNotContain("CHOWN", "ALL");
    }

    @Test
    void capabilitiesAddedBackAndPrivilegedContainersAreNotDropped() {
        assertThat(appliedStaticPolicy(HostConfig.newHostConfig()
                                .withCapDrop(Capability.SYS_ADMIN)
                                .withCapAdd(Capability.SYS_ADMIN))
                        .dropCapabilities())
                .as("Docker applies an added capability even when it is also dropped")
                .doesNotContain("SYS_ADMIN");
        assertThat(appliedStaticPolicy(HostConfig.newHostConfig().withCapAdd(Capability.ALL))
                        .dropCapabilities())
                .isEmpty();
        assertThat(appliedStaticPolicy(
                                HostConfig.newHostConfig().withPrivileged(true).withCapDrop(Capability.NET_RAW))
                        .dropCapabilities())
                .isEmpty();
    }

    @Test
    void aContainerWithoutRestrictionsIsReportedUnrestricted() {
        StaticPolicy docker = appliedStaticPolicy(HostConfig.newHostConfig().withNetworkMode("default"));
        StaticPolicy podman = appliedStaticPolicy(HostConfig.newHostConfig()
                .withNetworkMode("bridge")
                .withCapDrop(Capability.AUDIT_WRITE, Capability.MKNOD, Capability.NET_RAW)
                .withSecurityOpts(List.of())
                .withMemory(0L)
                .withNanoCPUs(0L)
                .withCpuQuota(0L)
                .withCpuPeriod(0L)
                .withPidsLimit(-1L));

        for (StaticPolicy applied : List.of(docker, podman)) {
            assertThat(applied.readOnlyRootFilesystem()).isFalse();
            assertThat(applied.networkMode()).isEqualTo(NetworkMode.DEFAULT);
            assertThat(applied.noNewPrivileges()).isFalse();
            assertThat(applied.memoryLimitBytes()).isZero();
            assertThat(applied.cpuLimitMillis()).isZero();
            assertThat(applied.pidsLimit()).isZero();
        }
        // The engines' default capability set is what a container runs with: only what lies outside it is dropped.
        assertThat(docker.dropCapabilities()).contains("SYS_ADMIN").doesNotContain("NET_RAW", "CHOWN");
        assertThat(podman.dropCapabilities()).contains("SYS_ADMIN", "NET_RAW").doesNotContain("CHOWN");
        assertThat(appliedStaticPolicy(HostConfig.newHostConfig().withPidsLimit(2048L))
                        .pidsLimit())
                .as("Podman's default pids limit is a limit")
                .isEqualTo(2048);
    }

    @Test
    void noNewPrivilegesIsReadInEverySpellingTheEnginesKeep() {
        for (String spelling : List.of(
                "no-new-privileges", "no-new-privileges:true", "no-new-privileges=true", "no-new-privileges:TRUE")) {
            assertThat(noNewPrivileges("label=disable", spelling)).as(spelling).isTrue();
        }
        for (String spelling : List.of("no-new-privileges:false", "no-new-privileges=false")) {
            assertThat(noNewPrivileges(spelling)).as(spelling).isFalse();
        }
        assertThat(noNewPrivileges("seccomp=unconfined")).isFalse();
    }

    @Test
    void aNoNewPrivilegesOptionThatCannotBeReadFailsNamingTheField() {
        assertThatThrownBy(() -> noNewPrivileges("no-new-privileges:maybe"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("HostConfig.SecurityOpt")
                .hasMessageContaining("no-new-privileges:maybe");
        assertThatThrownBy(() -> noNewPrivileges("no-new-privileges", "no-new-privileges=false"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("HostConfig.SecurityOpt");
    }

    @Test
    void theCpuLimitIsReadFromNanoCpusOrFromTheQuotaOverThePeriodRoundedUp() {
        assertThat(cpu(HostConfig.newHostConfig().withNanoCPUs(250_000_000L))).isEqualTo(250);
        assertThat(cpu(HostConfig.newHostConfig().withNanoCPUs(1_000_000_001L)))
                .as("a limit looser than 1000 millicores is not reported as 1000")
                .isEqualTo(1001);
        assertThat(cpu(HostConfig.newHostConfig().withCpuQuota(50_000L).withCpuPeriod(0L)))
                .as("no period: the kernel's 100 ms")
                .isEqualTo(500);
        assertThat(cpu(HostConfig.newHostConfig().withCpuQuota(50_000L).withCpuPeriod(200_000L)))
                .isEqualTo(250);
        assertThat(cpu(HostConfig.newHostConfig().withCpuQuota(-1L).withCpuPeriod(100_000L)))
                .isZero();
        assertThat(cpu(HostConfig.newHostConfig()
                        .withNanoCPUs(1_000_000_000L)
                        .withCpuQuota(150_000L)
                        .withCpuPeriod(100_000L)))
                .as("the looser of two readings")
                .isEqualTo(1500);
    }

    @Test
    void valuesThatCannotBeReadFailNamingTheField() {
        assertThatThrownBy(() -> appliedStaticPolicy(HostConfig.newHostConfig().withMemory(-1L)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("HostConfig.Memory");
        assertThatThrownBy(() -> appliedStaticPolicy(HostConfig.newHostConfig().withPidsLimit(-2L)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("HostConfig.PidsLimit");
        assertThatThrownBy(() -> appliedStaticPolicy(HostConfig.newHostConfig().withNanoCPUs(-1L)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("HostConfig.NanoCpus");
        assertThatThrownBy(() -> appliedStaticPolicy(HostConfig.newHostConfig().withCpuQuota(-5L)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("HostConfig.CpuQuota");
        assertThatThrownBy(() -> appliedStaticPolicy(
                        HostConfig.newHostConfig().withCpuQuota(50_000L).withCpuPeriod(-1L)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("HostConfig.CpuPeriod");
        assertThatThrownBy(() -> appliedStaticPolicy(HostConfig.newHostConfig().withCapDrop(Capability.NET_RAW, null)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("HostConfig.CapDrop");
    }

    private static boolean noNewPrivileges(String... securityOptions) {
        return appliedStaticPolicy(HostConfig.newHostConfig().withSecurityOpts(List.of(securityOptions)))
                .noNewPrivileges();
    }

    private static long cpu(HostConfig hostConfig) {
        return appliedStaticPolicy(hostConfig).cpuLimitMillis();
    }
}
