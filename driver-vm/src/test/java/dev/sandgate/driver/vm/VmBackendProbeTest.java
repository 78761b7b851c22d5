package dev.sandgate.driver.vm;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.conformance.LaunchPolicies;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.StaticPolicy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the probe's applied policy refuses to report. No VM boots here. */
class VmBackendProbeTest {
    private static final String GATEWAY = "probe-test";

    @TempDir
    Path root;

    @Test
    void theAppliedPolicyOfASandboxWithoutARunningQemuIsAnError() throws IOException {
        var probe = new VmBackendProbe(VmSettings.from(DriverSettings.EMPTY
                .with(VmSettings.STATE_DIRECTORY, root.toString())
                .with("vm.kernel", "/unused/kernel")
                .with("vm.initramfs", "/unused/initramfs")));
        var store = new StateStore(root);
        SandboxRef stopped = new SandboxRef(Identifiers.newSandboxId(), "team", "stopped");
        Path directory = Files.createDirectories(store.sandboxDirectory(GATEWAY, stopped.id()));
        store.write(
                directory,
                new VmRecord(
                        UUID.randomUUID().toString(),
                        VmRecord.stamps(
                                Map.of(),
                                GATEWAY,
                                stopped,
                                1,
                                LaunchPolicies.of(1, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY)
                                        .digest()),
                        SandboxSpec.ofImage(VmSettings.DEFAULT_IMAGE),
                        1,
                        VmRecord.Phase.STOPPED,
                        Optional.empty()));
        SandboxRef absent = new SandboxRef(Identifiers.newSandboxId(), "team", "absent");

        assertThatThrownBy(() -> probe.appliedPolicy(stopped))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no QEMU process runs for sandbox " + stopped.id());
        assertThatThrownBy(() -> probe.appliedPolicy(absent))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no VM state directory carries sandbox id " + absent.id());
    }
}
