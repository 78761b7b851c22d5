package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import java.io.UncheckedIOException;
import java.util.List;

/**
 * The VM driver's {@link java.util.ServiceLoader} entry, named {@value #NAME}: each sandbox is a QEMU virtual machine
 * (KVM where {@code /dev/kvm} is usable, TCG emulation otherwise). See docs/drivers/vm.md.
 *
 * <p>Settings (sizes take k, m, g suffixes; durations 500ms, 10s, 2m or ISO-8601):
 *
 * <ul>
 *   <li>{@code vm.state-dir}: where sandboxes' state directories live (default {@code
 *       $XDG_STATE_HOME/sandgate/vm}, else {@code ~/.local/state/sandgate/vm}); one gateway restart to the next, it
 *       must stay the same;
 *   <li>{@code vm.kernel}, {@code vm.initramfs}, optional {@code vm.root-disk}: the image named {@code default};
 *       {@code vm.image.<name>.kernel}, {@code .initramfs}, {@code .root-disk}: more images. {@code
 *       SandboxSpec.image} names one;
 *   <li>{@code vm.qemu} (default {@code qemu-system-x86_64} on PATH), {@code vm.mkfs} (default {@code mkfs.ext4});
 *   <li>{@code vm.accel}: {@code auto} (default), {@code kvm} or {@code tcg}; {@code vm.machine} (default {@value
 *       VmSettings#DEFAULT_MACHINE}); {@code vm.kernel-args} (default {@value VmSettings#DEFAULT_KERNEL_ARGUMENTS});
 *   <li>{@code vm.memory} (default 256m) and {@code vm.cpus} (default 1): used when the policy sets no limit;
 *   <li>{@code vm.workspace-size} (default 1g, sparse); {@code vm.stop-timeout} (default 10s, for a graceful guest
 *       shutdown); {@code vm.launch-timeout} (default 30s); {@code vm.watch-interval} (default 250ms).
 * </ul>
 */
public final class VmDriverProvider implements ComputeDriverProvider {
    public static final String NAME = "vm";
    public static final String STATE_DIRECTORY = VmSettings.STATE_DIRECTORY;
    public static final String KERNEL = VmSettings.KERNEL;
    public static final String INITRAMFS = VmSettings.INITRAMFS;
    public static final String ROOT_DISK = VmSettings.ROOT_DISK;

    /** Below the container drivers: a VM costs seconds to boot, so the gateway picks it only when asked to. */
    public static final int PRIORITY = 10;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int priority() {
        return PRIORITY;
    }

    @Override
    public Availability availability(DriverSettings config) {
        requireNonNull(config, "config is null");
        VmSettings settings;
        try {
            settings = VmSettings.from(config);
        } catch (DriverException e) {
            return Availability.unavailable(e.getMessage());
        }
        List<String> problems = settings.problems();
        if (!problems.isEmpty()) {
            return Availability.unavailable(String.join("; ", problems));
        }
        return Availability.available(settings.qemu() + " with "
                + (settings.useKvm() ? "KVM" : "TCG (no usable /dev/kvm)")
                + ", images " + new java.util.TreeSet<>(settings.images().keySet()) + ", state in "
                + settings.stateDirectory());
    }

    @Override
    public ComputeDriver create(DriverSettings config, DriverContext context) {
        requireNonNull(config, "config is null");
        requireNonNull(context, "context is null");
        VmSettings settings = VmSettings.from(config);
        List<String> problems = settings.problems();
        if (!problems.isEmpty()) {
            throw new DriverException(DriverErrorCode.UNAVAILABLE, String.join("; ", problems));
        }
        var store = new StateStore(settings.stateDirectory());
        try {
            store.sweep(context.gatewayId());
        } catch (UncheckedIOException e) {
            throw new DriverException(
                    DriverErrorCode.UNAVAILABLE,
                    STATE_DIRECTORY + ": cannot use " + settings.stateDirectory() + ": " + e.getMessage(),
                    e);
        }
        return new VmDriver(settings, store, context);
    }
}
