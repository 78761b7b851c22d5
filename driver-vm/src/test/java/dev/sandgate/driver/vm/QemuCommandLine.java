package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.StaticPolicy;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The command line of a running QEMU process, as the conformance probe reads it from {@code /proc/<pid>/cmdline},
 * and the restrictions it gives the guest: its RAM ({@code -m}), its vCPUs ({@code -smp}) and whether it has a network
 * device. It reads QEMU's own syntax, not what {@link Qemu} meant to build, and it fails loudly (IllegalStateException
 * naming the argument) on whatever it cannot read for certain: an option it does not know, a size or count it cannot
 * parse, a repeated {@code -m} or {@code -smp}, a configuration file. Where QEMU's syntax leaves room (a RAM or vCPU
 * maximum for hot-plug, a network back end), it reports the looser reading.
 */
final class QemuCommandLine {
    /** QEMU options that take no value (qemu-options.hx, QEMU 7.2). */
    private static final Set<String> FLAGS = Set.of(
            "nodefaults",
            "no-user-config",
            "no-reboot",
            "no-shutdown",
            "S",
            "s",
            "snapshot",
            "daemonize",
            "enable-kvm",
            "nographic",
            "no-hpet",
            "no-acpi",
            "mem-prealloc",
            "full-screen",
            "enable-sync-profile",
            "only-migratable",
            "preconfig",
            "win2k-hack",
            "no-fd-bootchk",
            "semihosting",
            "usb",
            "alt-grab",
            "ctrl-grab",
            "singlestep",
            "enable-fips",
            "xen-attach");

    /** QEMU options that take one value (qemu-options.hx, QEMU 7.2), but for the refused ones below. */
    private static final Set<String> WITH_VALUE = Set.of(
            "name",
            "machine",
            "M",
            "accel",
            "cpu",
            "m",
            "smp",
            "numa",
            "display",
            "vga",
            "kernel",
            "initrd",
            "append",
            "dtb",
            "chardev",
            "serial",
            "parallel",
            "monitor",
            "mon",
            "qmp",
            "qmp-pretty",
            "debugcon",
            "pidfile",
            "drive",
            "blockdev",
            "device",
            "global",
            "nic",
            "net",
            "netdev",
            "object",
            "bios",
            "boot",
            "rtc",
            "D",
            "d",
            "L",
            "k",
            "fsdev",
            "virtfs",
            "smbios",
            "acpitable",
            "sandbox",
            "msg",
            "action",
            "incoming",
            "trace",
            "plugin",
            "overcommit",
            "runas",
            "chroot",
            "uuid",
            "usbdevice",
            "hda",
            "hdb",
            "hdc",
            "hdd",
            "cdrom",
            "fda",
            "fdb",
            "mtdblock",
            "sd",
            "pflash",
            "audiodev",
            "watchdog-action",
            "icount",
            "mem-path",
            "loadvm",
            "option-rom",
            "fw_cfg",
            "add-fd",
            "iscsi",
            "g",
            "compat",
            "semihosting-config",
            "spice",
            "vnc",
            "echr",
            "tpmdev",
            "gdb",
            "prom-env",
            "seed");

    /** Options whose effect the command line alone does not show: a configuration file, edits of other options. */
    private static final Set<String> REFUSED = Set.of("readconfig", "set");

    private static final Pattern SIZE = Pattern.compile("(\\d+)([bkmgtpe]?)", Pattern.CASE_INSENSITIVE);
    private static final Pattern COUNT = Pattern.compile("\\d{1,9}");
    private static final Set<String> SMP_TOPOLOGY =
            Set.of("sockets", "dies", "clusters", "cores", "threads", "books", "drawers");

    /** One option as QEMU reads it: its name without the leading dashes, and its value if it takes one. */
    record Option(String name, Optional<String> value) {
        String describe() {
            return "-" + name + value.map(text -> " '" + text + "'").orElse("");
        }
    }

    private final String executable;
    private final List<Option> options;

    private QemuCommandLine(String executable, List<Option> options) {
        this.executable = executable;
        this.options = List.copyOf(options);
    }

    /**
     * Reads {@code argv} (the executable, then QEMU's arguments).
     *
     * @throws IllegalStateException naming the argument it cannot read
     */
    static QemuCommandLine parse(List<String> argv) {
        requireNonNull(argv, "argv is null");
        if (argv.isEmpty()) {
            throw new IllegalStateException("the command line is empty");
        }
        var options = new ArrayList<Option>();
        for (int i = 1; i < argv.size(); i++) {
            String argument = argv.get(i);
            if (!argument.startsWith("-") || argument.length() < 2) {
                throw new IllegalStateException("argument " + i + " '" + argument + "' is no option (a disk image?)");
            }
            // QEMU accepts -option and --option alike.
            String name = argument.startsWith("--") ? argument.substring(2) : argument.substring(1);
            if (REFUSED.contains(name)) {
                throw new IllegalStateException(
                        "option " + argument + " changes settings the command line does not show; the probe cannot"
                                + " read what it applies");
            }
            if (FLAGS.contains(name)) {
                options.add(new Option(name, Optional.empty()));
            } else if (WITH_VALUE.contains(name)) {
                if (i + 1 >= argv.size()) {
                    throw new IllegalStateException("option " + argument + " has no value");
                }
                String value = argv.get(++i);
                if ((name.equals("machine") || name.equals("M")) && setsSizes(value)) {
                    // -machine smp.cpus=3 gives three vCPUs whatever -smp says (seen on QEMU 7.2); memory.* likewise.
                    throw new IllegalStateException("option " + argument + " " + value + " sets the vCPUs or the"
                            + " memory beside -smp and -m; the probe does not read those keys");
                }
                options.add(new Option(name, Optional.of(value)));
            } else {
                throw new IllegalStateException(
                        "unknown QEMU option " + argument + " (argument " + i + "): the probe does not know whether it"
                                + " takes a value, so it cannot read the rest of the command line");
            }
        }
        return new QemuCommandLine(argv.getFirst(), options);
    }

    /** Whether a {@code -machine} value holds an {@code smp.*} or {@code memory.*} key. */
    private static boolean setsSizes(String machine) {
        for (String part : machine.split(",", -1)) {
            if (part.startsWith("smp.") || part.startsWith("memory.")) {
                return true;
            }
        }
        return false;
    }

    String executable() {
        return executable;
    }

    List<Option> options() {
        return options;
    }

    /**
     * The restrictions of this command line that a VM enforces from outside the guest; the others are reported
     * unrestricted, as nothing on the command line applies them.
     *
     * @param networkDevices the names (and aliases) of the device types this QEMU binary lists as network devices
     */
    StaticPolicy staticPolicy(Set<String> networkDevices) {
        return new StaticPolicy(false, networkMode(networkDevices), Set.of(), false, memoryBytes(), vcpus() * 1000L, 0);
    }

    /**
     * The guest's RAM in bytes, from {@code -m [size=]N[unit][,slots=S][,maxmem=M]}; with a {@code maxmem} for memory
     * hot-plug, the larger of the two.
     */
    long memoryBytes() {
        Option option = single("m");
        Map<String, String> values = keyValues(option, "size");
        long bytes = -1;
        for (Map.Entry<String, String> entry : values.entrySet()) {
            switch (entry.getKey()) {
                // QEMU reads -m's size in MiB unless it has a unit, and maxmem in bytes unless it has one.
                case "size" -> bytes = Math.max(bytes, size(option, entry.getValue(), 1L << 20));
                case "maxmem" -> bytes = Math.max(bytes, size(option, entry.getValue(), 1));
                case "slots" -> count(option, entry.getValue());
                default -> throw unreadable(option, "unknown key '" + entry.getKey() + "'");
            }
        }
        if (bytes <= 0) {
            throw unreadable(option, "no size");
        }
        return bytes;
    }

    /**
     * The guest's vCPUs, from {@code -smp [cpus=]N[,maxcpus=M][,sockets=..,cores=..,threads=..]}: the largest of the
     * count, the maximum for hot-plug and the topology's product.
     */
    int vcpus() {
        Option option = single("smp");
        Map<String, String> values = keyValues(option, "cpus");
        long vcpus = 0;
        long topology = 1;
        boolean hasTopology = false;
        for (Map.Entry<String, String> entry : values.entrySet()) {
            long count = count(option, entry.getValue());
            if (entry.getKey().equals("cpus") || entry.getKey().equals("maxcpus")) {
                vcpus = Math.max(vcpus, count);
            } else if (SMP_TOPOLOGY.contains(entry.getKey())) {
                try {
                    topology = Math.multiplyExact(topology, count);
                } catch (ArithmeticException e) {
                    throw unreadable(option, "the topology's product is too large");
                }
                hasTopology = true;
            } else {
                throw unreadable(option, "unknown key '" + entry.getKey() + "'");
            }
        }
        if (hasTopology) {
            vcpus = Math.max(vcpus, topology);
        }
        if (vcpus < 1 || vcpus > Integer.MAX_VALUE / 1000) {
            throw unreadable(option, "no vCPU count between 1 and " + Integer.MAX_VALUE / 1000);
        }
        return (int) vcpus;
    }

    /**
     * {@link NetworkMode#NONE} if the guest gets no network device: no {@code -nic}, {@code -net} or {@code -netdev}
     * but {@code none}, no {@code -device} of a network device type (or with a {@code netdev}), and no default NIC
     * ({@code -nodefaults}, or an explicit {@code -nic none} / {@code -net none}). Anything else is {@link
     * NetworkMode#DEFAULT}: a network back end counts even without a device, as the looser reading.
     */
    NetworkMode networkMode(Set<String> networkDevices) {
        boolean explicitNone = false;
        for (Option option : options) {
            switch (option.name()) {
                case "nic", "net" -> {
                    String type = keyValues(option, "type").getOrDefault("type", "");
                    if (!type.equals("none")) {
                        return NetworkMode.DEFAULT;
                    }
                    explicitNone = true;
                }
                case "netdev" -> {
                    return NetworkMode.DEFAULT;
                }
                case "device" -> {
                    Map<String, String> device = keyValues(option, "driver");
                    String driver = device.getOrDefault("driver", "");
                    if (networkDevices.contains(driver) || device.containsKey("netdev")) {
                        return NetworkMode.DEFAULT;
                    }
                }
                default -> {
                    // not a network option
                }
            }
        }
        boolean noDefaults = options.stream().anyMatch(option -> option.name().equals("nodefaults"));
        // Without -nodefaults and without an explicit "none", QEMU gives the guest a default NIC (user networking).
        return noDefaults || explicitNone ? NetworkMode.NONE : NetworkMode.DEFAULT;
    }

    /** The value of {@code key=} on the kernel command line ({@code -append}); empty if absent. */
    Optional<String> kernelArgument(String key) {
        List<Option> append = all("append");
        if (append.size() > 1) {
            throw new IllegalStateException("-append appears " + append.size() + " times");
        }
        if (append.isEmpty()) {
            return Optional.empty();
        }
        for (String word : append.getFirst().value().orElseThrow().split(" +", -1)) {
            if (word.startsWith(key + "=")) {
                return Optional.of(word.substring(key.length() + 1));
            }
        }
        return Optional.empty();
    }

    /** The value of the only {@code -name}; empty if absent. */
    Optional<String> name() {
        List<Option> names = all("name");
        if (names.size() > 1) {
            throw new IllegalStateException("-name appears " + names.size() + " times");
        }
        return names.stream()
                .findFirst()
                .map(option -> keyValues(option, "guest").getOrDefault("guest", ""));
    }

    private List<Option> all(String name) {
        return options.stream().filter(option -> option.name().equals(name)).toList();
    }

    private Option single(String name) {
        List<Option> found = all(name);
        if (found.isEmpty()) {
            throw new IllegalStateException("no -" + name
                    + " argument: QEMU then uses its machine's default, which the command line does not" + " show");
        }
        if (found.size() > 1) {
            throw new IllegalStateException("-" + name + " appears " + found.size() + " times: "
                    + found.stream().map(Option::describe).toList());
        }
        return found.getFirst();
    }

    /**
     * QEMU's {@code key=value,...} syntax: a first element without {@code =} is the value of {@code implicitKey};
     * {@code ,,} is a comma inside a value.
     */
    static Map<String, String> keyValues(Option option, String implicitKey) {
        String text = option.value().orElseThrow(() -> unreadable(option, "no value"));
        var elements = new ArrayList<String>();
        var current = new StringBuilder();
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == ',' && i + 1 < text.length() && text.charAt(i + 1) == ',') {
                current.append(',');
                i++;
            } else if (c == ',') {
                elements.add(current.toString());
                current.setLength(0);
            } else {
                current.append(c);
            }
        }
        elements.add(current.toString());
        var values = new LinkedHashMap<String, String>();
        for (int i = 0; i < elements.size(); i++) {
            String element = elements.get(i);
            int equals = element.indexOf('=');
            String key = equals < 0 && i == 0 ? implicitKey : equals < 0 ? element : element.substring(0, equals);
            String value = equals < 0 ? (i == 0 ? element : "on") : element.substring(equals + 1);
            if (values.put(key, value) != null) {
                throw unreadable(option, "'" + key + "' appears twice");
            }
        }
        return values;
    }

    private static long size(Option option, String text, long defaultUnit) {
        Matcher matcher = SIZE.matcher(text);
        if (!matcher.matches()) {
            throw unreadable(option, "'" + text + "' is not a size (digits and an optional unit B, K, M, G, T, P, E)");
        }
        long unit = switch (matcher.group(2).toUpperCase(Locale.ROOT)) {
            case "" -> defaultUnit;
            case "B" -> 1;
            case "K" -> 1L << 10;
            case "M" -> 1L << 20;
            case "G" -> 1L << 30;
            case "T" -> 1L << 40;
            case "P" -> 1L << 50;
            default -> 1L << 60;
        };
        try {
            return Math.multiplyExact(Long.parseLong(matcher.group(1)), unit);
        } catch (ArithmeticException | NumberFormatException e) {
            throw unreadable(option, "'" + text + "' is too large");
        }
    }

    private static long count(Option option, String text) {
        if (!COUNT.matcher(text).matches()) {
            throw unreadable(option, "'" + text + "' is not a count");
        }
        return Long.parseLong(text);
    }

    private static IllegalStateException unreadable(Option option, String problem) {
        return new IllegalStateException("cannot read " + option.describe() + ": " + problem);
    }
}
