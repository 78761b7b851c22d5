package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A configured VM image: what QEMU boots. The initramfs's {@code /init} must speak the guest side of the driver's
 * protocol (docs/drivers/vm.md); scripts/images/vm/build.sh builds one from Debian packages.
 *
 * @param kernel a bzImage ({@code -kernel})
 * @param initramfs a newc cpio archive, optionally compressed ({@code -initrd})
 * @param rootDisk an optional raw disk image, attached read-only with serial {@code root}
 */
record VmImage(Path kernel, Path initramfs, Optional<Path> rootDisk) {
    VmImage {
        requireNonNull(kernel, "kernel is null");
        requireNonNull(initramfs, "initramfs is null");
        requireNonNull(rootDisk, "rootDisk is null");
    }

    List<String> problems(String name) {
        var problems = new ArrayList<String>();
        check(problems, name, "kernel", kernel);
        check(problems, name, "initramfs", initramfs);
        rootDisk.ifPresent(disk -> check(problems, name, "root disk", disk));
        return problems;
    }

    private static void check(List<String> problems, String name, String what, Path file) {
        if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
            problems.add("image '" + name + "': " + what + " " + file + " is not a readable file");
        }
    }
}
