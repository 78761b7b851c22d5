package dev.sandgate.driver.vm;

import dev.sandgate.spi.Availability;
import dev.sandgate.spi.DriverSettings;
import java.nio.file.Path;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/**
 * Where the tests find the VM test image that scripts/images/vm/build.sh builds: {@code $SANDGATE_VM_IMAGE_DIR}
 * (exported by scripts/engines/vm.sh), else {@code ~/.cache/sandgate/vm/image}.
 */
final class VmTestImage {
    static final String IMAGE = VmSettings.DEFAULT_IMAGE;

    private VmTestImage() {}

    static Path directory() {
        String configured = System.getenv("SANDGATE_VM_IMAGE_DIR");
        return configured != null && !configured.isBlank()
                ? Path.of(configured)
                : Path.of(System.getProperty("user.home"), ".cache", "sandgate", "vm", "image");
    }

    /** Skips the calling test class with the reason, or fails it under CI ({@code sandgate.requireEngines=true}). */
    static void requireAvailable(DriverSettings config) {
        Availability availability = new VmDriverProvider().availability(config);
        if (!availability.available()) {
            String message = "the VM driver is not available here: " + availability.reason();
            if (Boolean.getBoolean("sandgate.requireEngines")) {
                Assertions.fail(message + " (sandgate.requireEngines=true: a missing backend is a failure)");
            }
            Assumptions.abort(message);
        }
    }

    /**
     * The driver's settings for tests: the test image as {@value #IMAGE}, state under {@code stateDirectory}, and the
     * accelerator {@code $SANDGATE_VM_ACCEL} names (scripts/engines/vm.sh sets it to {@code tcg} where {@code /dev/kvm}
     * exists but a KVM guest does not start), else the driver's default.
     */
    static DriverSettings config(Path stateDirectory) {
        DriverSettings config = DriverSettings.EMPTY
                .with(VmSettings.STATE_DIRECTORY, stateDirectory.toString())
                .with(VmSettings.KERNEL, directory().resolve("kernel").toString())
                .with(
                        VmSettings.INITRAMFS,
                        directory().resolve("initramfs.cpio").toString());
        String accelerator = System.getenv("SANDGATE_VM_ACCEL");
        return accelerator != null && !accelerator.isBlank()
                ? config.with(VmSettings.ACCELERATOR, accelerator)
                : config;
    }
}
