package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The VM driver's settings, read from {@link DriverSettings} (keys under {@code vm.}; see {@link VmDriverProvider}).
 *
 * @param stateDirectory where every sandbox's state directory lives
 * @param qemu the {@code qemu-system-x86_64} executable
 * @param mkfs the {@code mkfs.ext4} executable that formats new workspace disks
 * @param images the configured VM images by name ({@code SandboxSpec.image} names one)
 * @param accelerator KVM, TCG, or AUTO (KVM where {@code /dev/kvm} is usable)
 * @param machine QEMU's {@code -M} value
 * @param kernelArguments the kernel command line; the driver appends its own {@code sandgate.*} arguments
 * @param memoryBytes guest memory when the policy sets no memory limit
 * @param cpus vCPUs when the policy sets no CPU limit
 * @param workspaceBytes the size of a new workspace disk (a sparse file)
 * @param stopTimeout how long a graceful guest shutdown may take before QEMU is told to quit
 * @param launchTimeout how long QEMU may take to answer on its QMP socket after it was started
 * @param watchInterval how often a watch subscription looks at the state directory and the VMs
 */
record VmSettings(
        Path stateDirectory,
        Path qemu,
        Path mkfs,
        Map<String, VmImage> images,
        Accelerator accelerator,
        String machine,
        String kernelArguments,
        long memoryBytes,
        int cpus,
        long workspaceBytes,
        Duration stopTimeout,
        Duration launchTimeout,
        Duration watchInterval) {
    static final String PREFIX = "vm.";
    static final String STATE_DIRECTORY = "vm.state-dir";
    static final String QEMU = "vm.qemu";
    static final String MKFS = "vm.mkfs";
    static final String KERNEL = "vm.kernel";
    static final String INITRAMFS = "vm.initramfs";
    static final String ROOT_DISK = "vm.root-disk";
    static final String IMAGE_PREFIX = "vm.image.";
    static final String ACCELERATOR = "vm.accel";
    static final String MACHINE = "vm.machine";
    static final String KERNEL_ARGUMENTS = "vm.kernel-args";
    static final String MEMORY = "vm.memory";
    static final String CPUS = "vm.cpus";
    static final String WORKSPACE_SIZE = "vm.workspace-size";
    static final String STOP_TIMEOUT = "vm.stop-timeout";
    static final String LAUNCH_TIMEOUT = "vm.launch-timeout";
    static final String WATCH_INTERVAL = "vm.watch-interval";

    /** The image that {@code vm.kernel}, {@code vm.initramfs} and {@code vm.root-disk} define. */
    static final String DEFAULT_IMAGE = "default";

    /**
     * Measured with Debian's kernel under TCG: q35 without QEMU's ACPI tables boots reliably in 4 to 5 s of CPU. (The
     * microvm machine cannot attach disks to that kernel without ACPI, because it lacks
     * CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES, and with ACPI it hung in one boot of four.)
     */
    static final String DEFAULT_MACHINE = "q35,acpi=off";

    /** Without the timer arguments a TCG guest may hang calibrating its clock; they are harmless under KVM. */
    static final String DEFAULT_KERNEL_ARGUMENTS =
            "console=ttyS0 quiet panic=-1 reboot=t tsc=reliable no_timer_check lpj=4000000";

    /** Below this the test image's kernel does not boot; smaller memory limits are refused rather than failing late. */
    static final long MIN_MEMORY_BYTES = 96L * 1024 * 1024;

    static final int MAX_CPUS = 64;

    private static final Pattern IMAGE_KEY = Pattern.compile("vm\\.image\\.([^.]+)\\.(kernel|initramfs|root-disk)");
    private static final Pattern IMAGE_NAME = Pattern.compile("[a-z0-9]([a-z0-9._-]{0,62})");
    private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*([kmgt]?)(i?b)?");

    VmSettings {
        requireNonNull(stateDirectory, "stateDirectory is null");
        requireNonNull(qemu, "qemu is null");
        requireNonNull(mkfs, "mkfs is null");
        images = Map.copyOf(requireNonNull(images, "images is null"));
        requireNonNull(accelerator, "accelerator is null");
        requireNonNull(machine, "machine is null");
        requireNonNull(kernelArguments, "kernelArguments is null");
        requireNonNull(stopTimeout, "stopTimeout is null");
        requireNonNull(launchTimeout, "launchTimeout is null");
        requireNonNull(watchInterval, "watchInterval is null");
    }

    /** QEMU's accelerator. */
    enum Accelerator {
        AUTO,
        KVM,
        TCG
    }

    /** Reads the settings; INVALID_ARGUMENT names the first bad key. Does no I/O beyond resolving paths. */
    static VmSettings from(DriverSettings config) {
        requireNonNull(config, "config is null");
        // vm.image.* keys are checked where the images are read.
        config.rejectUnknown(
                PREFIX,
                Set.of(
                        STATE_DIRECTORY,
                        QEMU,
                        MKFS,
                        KERNEL,
                        INITRAMFS,
                        ROOT_DISK,
                        ACCELERATOR,
                        MACHINE,
                        KERNEL_ARGUMENTS,
                        MEMORY,
                        CPUS,
                        WORKSPACE_SIZE,
                        STOP_TIMEOUT,
                        LAUNCH_TIMEOUT,
                        WATCH_INTERVAL),
                Set.of(IMAGE_PREFIX));
        Path stateDirectory = config.get(STATE_DIRECTORY).map(Path::of).orElseGet(VmSettings::defaultStateDirectory);
        Path qemu = executable(config.get(QEMU, "qemu-system-x86_64"));
        Path mkfs = executable(config.get(MKFS, "mkfs.ext4"));
        Accelerator accelerator = accelerator(config.get(ACCELERATOR, "auto"));
        String machine = config.get(MACHINE, DEFAULT_MACHINE).trim();
        String kernelArguments =
                config.get(KERNEL_ARGUMENTS, DEFAULT_KERNEL_ARGUMENTS).trim();
        if (kernelArguments.contains("sandgate.")) {
            throw DriverException.invalidArgument(KERNEL_ARGUMENTS, "must not contain sandgate.* arguments");
        }
        long memory = size(config, MEMORY, "256m");
        if (memory < MIN_MEMORY_BYTES) {
            throw DriverException.invalidArgument(MEMORY, "must be at least " + (MIN_MEMORY_BYTES >> 20) + "m");
        }
        long cpus = config.asLong(CPUS, 1);
        if (cpus < 1 || cpus > MAX_CPUS) {
            throw DriverException.invalidArgument(CPUS, "must be between 1 and " + MAX_CPUS);
        }
        long workspace = size(config, WORKSPACE_SIZE, "1g");
        if (workspace < 16L * 1024 * 1024) {
            throw DriverException.invalidArgument(WORKSPACE_SIZE, "must be at least 16m");
        }
        return new VmSettings(
                stateDirectory,
                qemu,
                mkfs,
                images(config),
                accelerator,
                machine,
                kernelArguments,
                memory,
                (int) cpus,
                workspace,
                positive(config, STOP_TIMEOUT, Duration.ofSeconds(10)),
                positive(config, LAUNCH_TIMEOUT, Duration.ofSeconds(30)),
                positive(config, WATCH_INTERVAL, Duration.ofMillis(250)));
    }

    /** The image named {@code name}, or INVALID_ARGUMENT listing the configured ones. */
    VmImage image(String name) {
        VmImage image = images.get(name);
        if (image == null) {
            throw DriverException.invalidArgument(
                    "spec.image",
                    "'" + name + "' is not a configured VM image; configured: " + new TreeMap<>(images).keySet());
        }
        return image;
    }

    /** Whether KVM is used: asked for, or AUTO and {@code /dev/kvm} is readable and writable. */
    boolean useKvm() {
        return switch (accelerator) {
            case KVM -> true;
            case TCG -> false;
            case AUTO -> kvmUsable();
        };
    }

    static boolean kvmUsable() {
        Path kvm = Path.of("/dev/kvm");
        return Files.isReadable(kvm) && Files.isWritable(kvm);
    }

    /** What is missing on this machine to run VMs with these settings; empty when nothing is. */
    List<String> problems() {
        var problems = new ArrayList<String>();
        if (!Files.isExecutable(qemu)) {
            problems.add(QEMU + ": no executable " + qemu + " (install qemu-system-x86)");
        }
        if (!Files.isExecutable(executable("setsid"))) {
            problems.add("no setsid on PATH (install util-linux): QEMU runs in a session of its own");
        }
        if (!Files.isExecutable(mkfs)) {
            problems.add(MKFS + ": no executable " + mkfs + " (install e2fsprogs)");
        }
        if (images.isEmpty()) {
            problems.add("no VM image is configured: set " + KERNEL + " and " + INITRAMFS
                    + " (scripts/images/vm/build.sh builds one)");
        }
        new TreeMap<>(images).forEach((name, image) -> problems.addAll(image.problems(name)));
        if (accelerator == Accelerator.KVM && !kvmUsable()) {
            problems.add(ACCELERATOR + "=kvm but /dev/kvm is not usable");
        }
        Path existing = stateDirectory.toAbsolutePath();
        while (existing != null && !Files.exists(existing)) {
            existing = existing.getParent();
        }
        if (existing == null || !Files.isDirectory(existing) || !Files.isWritable(existing)) {
            problems.add(STATE_DIRECTORY + ": " + stateDirectory + " cannot be created or written");
        }
        return problems;
    }

    private static Map<String, VmImage> images(DriverSettings config) {
        var parts = new TreeMap<String, Map<String, String>>();
        Optional<String> kernel = config.get(KERNEL);
        Optional<String> initramfs = config.get(INITRAMFS);
        Optional<String> rootDisk = config.get(ROOT_DISK);
        if (kernel.isPresent() || initramfs.isPresent() || rootDisk.isPresent()) {
            var image = new TreeMap<String, String>();
            kernel.ifPresent(value -> image.put("kernel", value));
            initramfs.ifPresent(value -> image.put("initramfs", value));
            rootDisk.ifPresent(value -> image.put("root-disk", value));
            parts.put(DEFAULT_IMAGE, image);
        }
        config.properties().forEach((key, value) -> {
            if (!key.startsWith(IMAGE_PREFIX) || value.isBlank()) {
                return;
            }
            Matcher matcher = IMAGE_KEY.matcher(key);
            if (!matcher.matches() || !IMAGE_NAME.matcher(matcher.group(1)).matches()) {
                throw DriverException.invalidArgument(
                        key,
                        "image settings are vm.image.<name>.kernel, .initramfs or .root-disk, with a name of lower"
                                + " case letters, digits, '.', '_' and '-'");
            }
            String name = matcher.group(1);
            Map<String, String> image = parts.computeIfAbsent(name, ignored -> new TreeMap<>());
            if (image.putIfAbsent(matcher.group(2), value) != null) {
                throw DriverException.invalidArgument(key, "image '" + name + "' is configured twice");
            }
        });
        var images = new TreeMap<String, VmImage>();
        parts.forEach((name, image) -> {
            String prefix = name.equals(DEFAULT_IMAGE) && kernel.isPresent() ? PREFIX : IMAGE_PREFIX + name + ".";
            if (!image.containsKey("kernel") || !image.containsKey("initramfs")) {
                throw DriverException.invalidArgument(
                        prefix + (image.containsKey("kernel") ? "initramfs" : "kernel"),
                        "is required for image '" + name + "'");
            }
            images.put(
                    name,
                    new VmImage(
                            Path.of(image.get("kernel")),
                            Path.of(image.get("initramfs")),
                            Optional.ofNullable(image.get("root-disk")).map(Path::of)));
        });
        return images;
    }

    private static Accelerator accelerator(String value) {
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "auto" -> Accelerator.AUTO;
            case "kvm" -> Accelerator.KVM;
            case "tcg" -> Accelerator.TCG;
            default -> throw DriverException.invalidArgument(ACCELERATOR, "must be auto, kvm or tcg");
        };
    }

    /** A size in bytes: a number with an optional k, m, g or t suffix (powers of 1024). */
    static long size(DriverSettings config, String key, String defaultValue) {
        String text = config.get(key, defaultValue).trim().toLowerCase(Locale.ROOT);
        Matcher matcher = SIZE.matcher(text);
        if (!matcher.matches()) {
            throw DriverException.invalidArgument(key, "must be a size such as 512m or 2g, got '" + text + "'");
        }
        int shift = switch (matcher.group(2)) {
            case "" -> 0;
            case "k" -> 10;
            case "m" -> 20;
            case "g" -> 30;
            default -> 40;
        };
        try {
            long number = Long.parseLong(matcher.group(1));
            if (number > (Long.MAX_VALUE >> shift)) {
                throw new NumberFormatException();
            }
            return number << shift;
        } catch (NumberFormatException e) {
            throw DriverException.invalidArgument(key, "is too large");
        }
    }

    private static Duration positive(DriverSettings config, String key, Duration defaultValue) {
        Duration duration = config.asDuration(key, defaultValue);
        if (duration.isNegative() || duration.isZero()) {
            throw DriverException.invalidArgument(key, "must be positive");
        }
        return duration;
    }

    /** A command name is looked up on PATH (and in the sbin directories, which a non-root PATH lacks). */
    private static Path executable(String command) {
        if (command.contains("/")) {
            return Path.of(command);
        }
        var directories = new ArrayList<String>();
        String path = System.getenv("PATH");
        if (path != null) {
            directories.addAll(List.of(path.split(":")));
        }
        directories.addAll(List.of("/usr/local/sbin", "/usr/sbin", "/sbin"));
        for (String directory : directories) {
            if (!directory.isEmpty()) {
                Path candidate = Path.of(directory, command);
                if (Files.isExecutable(candidate)) {
                    return candidate;
                }
            }
        }
        return Path.of(command);
    }

    private static Path defaultStateDirectory() {
        String xdg = System.getenv("XDG_STATE_HOME");
        Path base = xdg != null && !xdg.isBlank()
                ? Path.of(xdg)
                : Path.of(System.getProperty("user.home"), ".local", "state");
        return base.resolve("sandgate").resolve("vm");
    }
}
