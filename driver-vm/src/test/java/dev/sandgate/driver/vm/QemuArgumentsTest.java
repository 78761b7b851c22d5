package dev.sandgate.driver.vm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.conformance.LaunchPolicies;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StaticPolicy;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** How a launch policy maps onto QEMU's command line. */
class QemuArgumentsTest {
    /** A sandbox, an image and a QEMU of known settings, for the tests that build a command line. */
    static final SandboxRef REF = new SandboxRef("0b7e5f3c-2d8a-4c1e-9f00-1a2b3c4d5e6f", "team", "agent");

    static final VmImage IMAGE = new VmImage(Path.of("/i/vmlinuz"), Path.of("/i/initrd.gz"), Optional.empty());
    static final Qemu QEMU = new Qemu(VmSettings.from(DriverSettings.EMPTY
            .with("vm.kernel", "/i/vmlinuz")
            .with("vm.initramfs", "/i/initrd.gz")
            .with("vm.accel", "tcg")
            .with("vm.memory", "384m")
            .with("vm.cpus", "2")));

    @Test
    void networkNoneLaunchesWithoutAnyNetworkDevice() {
        List<String> args = arguments(policy(NetworkMode.NONE, 0, 0));

        assertThat(value(args, "-nic")).isEqualTo("none");
        assertThat(args).contains("-nodefaults");
    }

    @Test
    void networkDefaultIsRestrictedUserModeNetworking() {
        List<String> args = arguments(policy(NetworkMode.DEFAULT, 0, 0));

        assertThat(value(args, "-nic")).isEqualTo("user,model=virtio-net-pci,restrict=on");
    }

    @Test
    void theMemoryLimitIsTheGuestMemory() {
        assertThat(value(arguments(policy(NetworkMode.NONE, 200L << 20, 0)), "-m"))
                .isEqualTo("200M");
        assertThat(value(arguments(policy(NetworkMode.NONE, 0, 0)), "-m")).isEqualTo("384M");
    }

    @Test
    void theCpuLimitInWholeCoresIsTheNumberOfVcpusAtMost64() {
        assertThat(value(arguments(policy(NetworkMode.NONE, 0, 1000)), "-smp")).isEqualTo("1");
        assertThat(value(arguments(policy(NetworkMode.NONE, 0, 2000)), "-smp")).isEqualTo("2");
        assertThat(value(arguments(policy(NetworkMode.NONE, 0, 64_000)), "-smp"))
                .isEqualTo("64");
        // Above 64 cores the guest gets 64 vCPUs: fewer than asked, which is stricter.
        assertThat(value(arguments(policy(NetworkMode.NONE, 0, 128_000)), "-smp"))
                .isEqualTo("64");
        assertThat(value(arguments(policy(NetworkMode.NONE, 0, 0)), "-smp")).isEqualTo("2");
    }

    @Test
    void aCpuLimitThatIsNotWholeCoresIsNeverRoundedToVcpus() {
        for (long millis : new long[] {1, 500, 999, 1500, 2001}) {
            assertThatThrownBy(() -> arguments(policy(NetworkMode.NONE, 0, millis)))
                    .as("%d millicores", millis)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(millis + " millicores");
        }
    }

    @Test
    void theKernelCommandLineCarriesTheLaunchInput() {
        LaunchInput launch =
                new LaunchInput(5, LaunchPolicies.of(2, policy(NetworkMode.NONE, 0, 0), DynamicPolicy.EMPTY));

        String append = value(QEMU.arguments(IMAGE, REF, launch), "-append");

        assertThat(append)
                .startsWith(VmSettings.DEFAULT_KERNEL_ARGUMENTS)
                .contains("sandgate.sandbox-id=" + REF.id())
                .contains("sandgate.generation=5")
                .contains("sandgate.policy-digest=" + launch.policy().digest());
    }

    @Test
    void theConfigAndRootDisksAreReadOnlyAndTheWorkspaceIsNot() {
        var image = new VmImage(Path.of("/i/vmlinuz"), Path.of("/i/initrd.gz"), Optional.of(Path.of("/i/root,1.img")));
        LaunchInput launch =
                new LaunchInput(1, LaunchPolicies.of(1, policy(NetworkMode.NONE, 0, 0), DynamicPolicy.EMPTY));

        List<String> args = QEMU.arguments(image, REF, launch);

        assertThat(args)
                .contains("id=workspace,file=workspace.img,format=raw,if=none")
                .contains("id=config,file=config.img,format=raw,if=none,readonly=on")
                .contains("id=root,file=/i/root,,1.img,format=raw,if=none,readonly=on")
                .contains("virtio-blk-pci,drive=workspace,serial=workspace");
    }

    private static List<String> arguments(StaticPolicy policy) {
        return QEMU.arguments(IMAGE, REF, new LaunchInput(1, LaunchPolicies.of(1, policy, DynamicPolicy.EMPTY)));
    }

    private static StaticPolicy policy(NetworkMode network, long memory, long cpuMillis) {
        return new StaticPolicy(false, network, Set.of(), false, memory, cpuMillis, 0);
    }

    private static String value(List<String> args, String option) {
        int index = args.indexOf(option);
        assertThat(index).as("%s in %s", option, args).isNotNegative();
        return args.get(index + 1);
    }
}
