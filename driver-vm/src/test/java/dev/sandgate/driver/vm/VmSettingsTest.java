package dev.sandgate.driver.vm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class VmSettingsTest {
    private static final DriverSettings IMAGE =
            DriverSettings.EMPTY.with("vm.kernel", "/images/vmlinuz").with("vm.initramfs", "/images/initrd.gz");

    @Test
    void defaultsAreTheMeasuredOnes() {
        VmSettings settings = VmSettings.from(IMAGE);

        assertThat(settings.machine()).isEqualTo("q35,acpi=off");
        assertThat(settings.kernelArguments()).contains("tsc=reliable", "no_timer_check", "lpj=4000000");
        assertThat(settings.memoryBytes()).isEqualTo(256L << 20);
        assertThat(settings.cpus()).isEqualTo(1);
        assertThat(settings.stopTimeout()).isEqualTo(Duration.ofSeconds(10));
    }

    @Test
    void kernelAndInitramfsDefineTheDefaultImageAndPrefixedKeysMoreImages() {
        DriverSettings config = IMAGE.with("vm.image.big.kernel", "/big/vmlinuz")
                .with("vm.image.big.initramfs", "/big/initrd.gz")
                .with("vm.image.big.root-disk", "/big/root.img");

        VmSettings settings = VmSettings.from(config);

        assertThat(settings.images())
                .containsEntry(
                        "default",
                        new VmImage(Path.of("/images/vmlinuz"), Path.of("/images/initrd.gz"), Optional.empty()))
                .containsEntry(
                        "big",
                        new VmImage(
                                Path.of("/big/vmlinuz"),
                                Path.of("/big/initrd.gz"),
                                Optional.of(Path.of("/big/root.img"))));
    }

    @Test
    void anUnknownImageIsRefusedNamingTheConfiguredOnes() {
        VmSettings settings = VmSettings.from(IMAGE);

        assertThatThrownBy(() -> settings.image("ubuntu"))
                .isInstanceOfSatisfying(
                        DriverException.class, e -> assertThat(e.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT))
                .hasMessageStartingWith("spec.image:")
                .hasMessageContaining("[default]");
    }

    @Test
    void anImageWithoutInitramfsIsRefusedNamingTheKey() {
        assertInvalid(DriverSettings.EMPTY.with("vm.image.small.kernel", "/k"), "vm.image.small.initramfs:");
    }

    @Test
    void badValuesAreRefusedNamingTheKey() {
        assertInvalid(IMAGE.with("vm.memory", "lots"), "vm.memory:");
        assertInvalid(IMAGE.with("vm.memory", "64m"), "vm.memory:");
        assertInvalid(IMAGE.with("vm.cpus", "0"), "vm.cpus:");
        assertInvalid(IMAGE.with("vm.accel", "hvf"), "vm.accel:");
        assertInvalid(IMAGE.with("vm.kernel-args", "console=ttyS0 sandgate.generation=1"), "vm.kernel-args:");
        assertInvalid(IMAGE.with("vm.image.Bad Name.kernel", "/k"), "vm.image.Bad Name.kernel:");
    }

    @Test
    void sizesTakeBinarySuffixes() {
        assertThat(VmSettings.size(DriverSettings.EMPTY.with("k", "2g"), "k", "0"))
                .isEqualTo(2L << 30);
        assertThat(VmSettings.size(DriverSettings.EMPTY.with("k", "512M"), "k", "0"))
                .isEqualTo(512L << 20);
        assertThat(VmSettings.size(DriverSettings.EMPTY.with("k", "4096"), "k", "0"))
                .isEqualTo(4096);
    }

    @Test
    void problemsNameWhatIsMissing() {
        VmSettings settings = VmSettings.from(IMAGE.with("vm.qemu", "/nonexistent/qemu"));

        assertThat(settings.problems())
                .anySatisfy(
                        problem -> assertThat(problem).startsWith("vm.qemu:").contains("/nonexistent/qemu"))
                .anySatisfy(problem -> assertThat(problem).contains("kernel /images/vmlinuz"));
    }

    @Test
    void aMisspeltSettingIsRefusedInsteadOfIgnored() {
        assertInvalid(IMAGE.with("vm.memroy", "512m"), "vm.memroy: is not a setting of this driver");
    }

    private static void assertInvalid(DriverSettings config, String messageStart) {
        assertThatThrownBy(() -> VmSettings.from(config))
                .isInstanceOfSatisfying(
                        DriverException.class, e -> assertThat(e.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT))
                .hasMessageStartingWith(messageStart);
    }
}
