package dev.sandgate.driver.vm;

import dev.sandgate.spi.DriverConfig;
import java.nio.file.Path;

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

    /** The driver's settings for tests: the test image as {@value #IMAGE}, state under {@code stateDirectory}. */
    static DriverConfig config(Path stateDirectory) {
        return DriverConfig.EMPTY
                .with(VmSettings.STATE_DIRECTORY, stateDirectory.toString())
                .with(VmSettings.KERNEL, directory().resolve("vmlinuz").toString())
                .with(VmSettings.INITRAMFS, directory().resolve("initramfs.gz").toString());
    }
}
