package dev.sandgate.driver.vm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.conformance.LaunchPolicies;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StaticPolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** How the conformance probe reads a QEMU command line: QEMU's syntax, and loud failures for what it cannot read. */
class QemuCommandLineTest {
    private static final Set<String> NETWORK_DEVICES = Set.of("e1000", "virtio-net-pci", "virtio-net");
    private static final SandboxRef REF = QemuArgumentsTest.REF;
    private static final VmImage IMAGE = QemuArgumentsTest.IMAGE;
    private static final Qemu QEMU = QemuArgumentsTest.QEMU;

    @Test
    void theDriversOwnArgumentsReadBackAsThePolicyTheyApply() {
        var none = new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, 256L << 20, 1000, 0);
        var network = new StaticPolicy(false, NetworkMode.DEFAULT, Set.of(), false, 1L << 30, 3000, 0);

        assertThat(readBack(none)).isEqualTo(none);
        assertThat(readBack(network)).isEqualTo(network);
        assertThat(readBack(new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, 0, 0, 0)))
                .as("no limits in the policy: the configured defaults, which are limits all the same")
                .isEqualTo(new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, 384L << 20, 2000, 0));
    }

    @Test
    void theGuestMemoryIsReadInQemusUnits() {
        assertThat(line("-m", "512").memoryBytes()).isEqualTo(512L << 20);
        assertThat(line("-m", "256M").memoryBytes()).isEqualTo(256L << 20);
        assertThat(line("-m", "1g").memoryBytes()).isEqualTo(1L << 30);
        assertThat(line("-m", "size=200M").memoryBytes()).isEqualTo(200L << 20);
        assertThat(line("-m", "268435456B").memoryBytes()).isEqualTo(256L << 20);
        assertThat(line("--m", "128").memoryBytes()).isEqualTo(128L << 20);
        assertThat(line("-m", "256M,slots=2,maxmem=1G").memoryBytes())
                .as("memory that can be hot-plugged up to maxmem counts as maxmem")
                .isEqualTo(1L << 30);
    }

    @Test
    void theVcpusAreTheLargestCountTheSmpArgumentAllows() {
        assertThat(line("-smp", "2").vcpus()).isEqualTo(2);
        assertThat(line("-smp", "cpus=3").vcpus()).isEqualTo(3);
        assertThat(line("-smp", "2,maxcpus=4").vcpus()).isEqualTo(4);
        assertThat(line("-smp", "sockets=2,cores=2,threads=2").vcpus()).isEqualTo(8);
    }

    @Test
    void anUnreadableOrMissingLimitFailsNamingTheArgument() {
        assertUnreadable(line("-m", "lots")::memoryBytes, "-m 'lots'");
        assertUnreadable(line("-m", "1.5G")::memoryBytes, "-m '1.5G'");
        assertUnreadable(line("-m", "256M,shared=on")::memoryBytes, "unknown key 'shared'");
        assertUnreadable(line("-m", "256M", "-m", "512M")::memoryBytes, "-m appears 2 times");
        assertUnreadable(line("-smp", "1")::memoryBytes, "no -m argument");
        assertUnreadable(line("-smp", "two")::vcpus, "-smp 'two'");
        assertUnreadable(line("-smp", "0")::vcpus, "-smp '0'");
        assertUnreadable(line("-m", "256M")::vcpus, "no -smp argument");
    }

    @Test
    void theGuestHasNoNetworkOnlyWithoutAnyNetworkDeviceOrBackEndOrDefaultNic() {
        assertThat(network("-nodefaults", "-nic", "none")).isEqualTo(NetworkMode.NONE);
        assertThat(network("-nodefaults")).isEqualTo(NetworkMode.NONE);
        assertThat(network("-nic", "none")).isEqualTo(NetworkMode.NONE);
        assertThat(network("-net", "none")).isEqualTo(NetworkMode.NONE);
        assertThat(network("-nodefaults", "-device", "virtio-blk-pci,drive=workspace,serial=workspace"))
                .isEqualTo(NetworkMode.NONE);

        assertThat(network()).as("QEMU's default NIC").isEqualTo(NetworkMode.DEFAULT);
        assertThat(network("-nodefaults", "-nic", "user,model=virtio-net-pci,restrict=on"))
                .isEqualTo(NetworkMode.DEFAULT);
        assertThat(network("-nodefaults", "-nic", "none", "-nic", "user")).isEqualTo(NetworkMode.DEFAULT);
        assertThat(network("-nodefaults", "-net", "nic")).isEqualTo(NetworkMode.DEFAULT);
        assertThat(network("-nodefaults", "-netdev", "user,id=n0")).isEqualTo(NetworkMode.DEFAULT);
        assertThat(network("-nodefaults", "-device", "e1000")).isEqualTo(NetworkMode.DEFAULT);
        assertThat(network("-nodefaults", "-device", "driver=virtio-net,mac=52:54:00:12:34:56"))
                .isEqualTo(NetworkMode.DEFAULT);
        assertThat(network("-nodefaults", "-device", "some-future-nic,netdev=n0"))
                .isEqualTo(NetworkMode.DEFAULT);
    }

    @Test
    void aCommandLineThatCannotBeReadForCertainFailsNamingTheArgument() {
        assertThatThrownBy(() -> line("-m", "256M", "-frobnicate", "1"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("unknown QEMU option -frobnicate");
        assertThatThrownBy(() -> line("-readconfig", "vm.cfg"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("-readconfig");
        assertThatThrownBy(() -> line("disk.img"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'disk.img' is no option");
        assertThatThrownBy(() -> line("-m"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("option -m has no value");
    }

    @Test
    void theKernelCommandLineArgumentsAreRead() {
        QemuCommandLine line = line("-append", "console=ttyS0 sandgate.generation=3  sandgate.policy-digest=sha256:ab");

        assertThat(line.kernelArgument("sandgate.generation")).contains("3");
        assertThat(line.kernelArgument("sandgate.policy-digest")).contains("sha256:ab");
        assertThat(line.kernelArgument("sandgate.sandbox-id")).isEmpty();
    }

    private static StaticPolicy readBack(StaticPolicy policy) {
        var argv = new ArrayList<String>();
        argv.add("/usr/bin/qemu-system-x86_64");
        argv.addAll(QEMU.arguments(IMAGE, REF, new LaunchInput(1, LaunchPolicies.of(1, policy, DynamicPolicy.EMPTY))));
        return QemuCommandLine.parse(argv).staticPolicy(NETWORK_DEVICES);
    }

    private static NetworkMode network(String... arguments) {
        return line(arguments).networkMode(NETWORK_DEVICES);
    }

    private static QemuCommandLine line(String... arguments) {
        var argv = new ArrayList<String>();
        argv.add("qemu-system-x86_64");
        argv.addAll(List.of(arguments));
        return QemuCommandLine.parse(argv);
    }

    private static void assertUnreadable(Runnable read, String named) {
        assertThatThrownBy(read::run).isInstanceOf(IllegalStateException.class).hasMessageContaining(named);
    }

    @Test
    void aMachineOptionThatSetsVcpusOrMemoryIsRefused() {
        // QEMU 7.2 runs three vCPUs for "-smp 1 -M pc,smp.cpus=3": reading -smp alone would report one.
        for (String machine : List.of("pc,smp.cpus=3", "q35,memory.size=1G")) {
            assertThatThrownBy(() -> QemuCommandLine.parse(
                            List.of("qemu-system-x86_64", "-nodefaults", "-m", "256M", "-smp", "1", "-M", machine)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(machine);
        }
    }
}
