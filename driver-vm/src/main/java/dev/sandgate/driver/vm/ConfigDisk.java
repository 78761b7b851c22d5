package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The launch input handed to the guest: a read-only virtio disk (serial {@code config}) holding a POSIX tar archive,
 * which the guest's {@code /init} unpacks into {@code /run/sandgate}:
 *
 * <ul>
 *   <li>{@code launch.env}: shell assignments of {@code SANDGATE_SANDBOX_ID}, {@code SANDGATE_WORKSPACE}, {@code
 *       SANDGATE_NAME}, {@code SANDGATE_GENERATION}, {@code SANDGATE_POLICY_DIGEST}, {@code
 *       SANDGATE_POLICY_REVISION} and {@code SANDGATE_NETWORK} ({@code none} or {@code user});
 *   <li>{@code policy.json}: the committed policy document, byte for byte (the guest checks it against the digest on
 *       the kernel command line);
 *   <li>{@code environment.sh}: {@code export NAME='value'} lines of the spec's environment (secrets: the disk is
 *       owner-only on the host and never on a command line);
 *   <li>{@code command.sh}: {@code exec 'command' 'arg'...} when the spec names a command or arguments, else empty.
 * </ul>
 */
final class ConfigDisk {
    static final String SERIAL = "config";
    private static final int BLOCK = 512;

    private ConfigDisk() {}

    /** Refuses what a shell script cannot carry: NUL characters. */
    static void validate(SandboxSpec spec) {
        spec.environment().forEach((name, value) -> {
            if (value.indexOf('\0') >= 0) {
                throw DriverException.invalidArgument("spec.environment[" + name + "]", "must not contain NUL");
            }
        });
        for (String part : concat(spec.command(), spec.args())) {
            if (part.indexOf('\0') >= 0) {
                throw DriverException.invalidArgument("spec.command", "must not contain NUL");
            }
        }
    }

    /** The archive's files, in order. */
    static Map<String, byte[]> files(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
        var files = new LinkedHashMap<String, byte[]>();
        var env = new StringBuilder();
        env.append("SANDGATE_SANDBOX_ID=").append(quote(ref.id())).append('\n');
        env.append("SANDGATE_WORKSPACE=").append(quote(ref.workspace())).append('\n');
        env.append("SANDGATE_NAME=").append(quote(ref.name())).append('\n');
        env.append("SANDGATE_GENERATION=").append(launch.generation()).append('\n');
        env.append("SANDGATE_POLICY_DIGEST=")
                .append(quote(launch.policy().digest()))
                .append('\n');
        env.append("SANDGATE_POLICY_REVISION=")
                .append(launch.policy().revision())
                .append('\n');
        env.append("SANDGATE_NETWORK=").append(network(launch)).append('\n');
        files.put("launch.env", utf8(env));
        files.put("policy.json", launch.policy().canonicalDocument());
        var environment = new StringBuilder();
        new TreeMap<>(spec.environment())
                .forEach((name, value) -> environment
                        .append("export ")
                        .append(name)
                        .append('=')
                        .append(quote(value))
                        .append('\n'));
        files.put("environment.sh", utf8(environment));
        var command = new StringBuilder();
        List<String> words = concat(spec.command(), spec.args());
        if (!words.isEmpty()) {
            command.append("exec");
            words.forEach(word -> command.append(' ').append(quote(word)));
            command.append('\n');
        }
        files.put("command.sh", utf8(command));
        return files;
    }

    static String network(LaunchInput launch) {
        return switch (launch.policy().staticPolicy().networkMode()) {
            case NONE -> "none";
            case DEFAULT -> "user";
        };
    }

    /** Writes the archive to {@code file} (owner-only), replacing it. */
    static void write(Path file, SandboxRef ref, SandboxSpec spec, LaunchInput launch) throws IOException {
        byte[] archive = tar(files(ref, spec, launch));
        Files.deleteIfExists(file);
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.write(file, archive, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
    }

    /** A ustar archive of regular files (mode 0600, owner root, mtime 0), ending with two zero blocks. */
    static byte[] tar(Map<String, byte[]> files) {
        var out = new ByteArrayOutputStream();
        files.forEach((name, content) -> {
            requireNonNull(content, "content is null");
            out.writeBytes(header(name, content.length));
            out.writeBytes(content);
            out.writeBytes(new byte[padding(content.length)]);
        });
        out.writeBytes(new byte[2 * BLOCK]);
        return out.toByteArray();
    }

    private static byte[] header(String name, long size) {
        byte[] nameBytes = name.getBytes(StandardCharsets.US_ASCII);
        if (nameBytes.length > 99) {
            throw new IllegalArgumentException("tar entry name too long: " + name);
        }
        byte[] header = new byte[BLOCK];
        put(header, 0, nameBytes);
        put(header, 100, octal(0600, 8));
        put(header, 108, octal(0, 8));
        put(header, 116, octal(0, 8));
        put(header, 124, octal(size, 12));
        put(header, 136, octal(0, 12));
        header[156] = '0';
        put(header, 257, "ustar\0".getBytes(StandardCharsets.US_ASCII));
        put(header, 263, "00".getBytes(StandardCharsets.US_ASCII));
        put(header, 265, "root".getBytes(StandardCharsets.US_ASCII));
        put(header, 297, "root".getBytes(StandardCharsets.US_ASCII));
        // The checksum is computed with its own field as eight spaces, then written as six digits, NUL, space.
        for (int i = 148; i < 156; i++) {
            header[i] = ' ';
        }
        long checksum = 0;
        for (byte b : header) {
            checksum += b & 0xff;
        }
        put(header, 148, String.format("%06o\0 ", checksum).getBytes(StandardCharsets.US_ASCII));
        return header;
    }

    /** {@code value} as zero-padded octal digits followed by NUL, {@code width} bytes in all. */
    private static byte[] octal(long value, int width) {
        String digits = Long.toOctalString(value);
        if (digits.length() > width - 1) {
            throw new IllegalArgumentException("tar field overflow: " + value);
        }
        return ("0".repeat(width - 1 - digits.length()) + digits + "\0").getBytes(StandardCharsets.US_ASCII);
    }

    private static int padding(int length) {
        return (BLOCK - length % BLOCK) % BLOCK;
    }

    private static void put(byte[] target, int offset, byte[] value) {
        System.arraycopy(value, 0, target, offset, value.length);
    }

    /** A POSIX shell single-quoted word. */
    static String quote(String value) {
        return "'" + value.replace("'", "'\\''") + "'";
    }

    private static byte[] utf8(CharSequence text) {
        return text.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static List<String> concat(List<String> first, List<String> second) {
        var all = new ArrayList<String>(first.size() + second.size());
        all.addAll(first);
        all.addAll(second);
        return all;
    }
}
