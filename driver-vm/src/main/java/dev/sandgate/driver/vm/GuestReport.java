package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * What the guest reported on its control channel (the second serial port, logged by QEMU to {@code control.log}) in
 * the current boot. The guest's {@code /init} writes one line per event, each starting with {@value #PREFIX}:
 *
 * <ul>
 *   <li>{@code stage <name> [detail]}: boot progress ({@code kernel-started}, {@code launch-input}, {@code
 *       workspace-mounted});
 *   <li>{@code ready generation=<G>}: the workspace is mounted and the control channel listens; the workload (if
 *       the spec has a command) starts right after;
 *   <li>{@code stopping}: a graceful stop began;
 *   <li>{@code exited status=<N>}: the workload ended; the VM powers off;
 *   <li>{@code failed <reason>}: the guest could not set up the launch; the VM powers off.
 * </ul>
 *
 * The workload runs as root in the guest and could write such lines too: it can mislead only the report of its own
 * sandbox, never another sandbox or the host.
 *
 * @param lines the protocol lines, without the prefix, in order
 */
record GuestReport(List<String> lines) {
    static final String PREFIX = "sandgate: ";
    static final GuestReport EMPTY = new GuestReport(List.of());

    /** Only the beginning of a log is read: the protocol lines come early and the log never grows much. */
    private static final int MAX_BYTES = 256 * 1024;

    GuestReport {
        lines = List.copyOf(requireNonNull(lines, "lines is null"));
    }

    static GuestReport read(Path controlLog) {
        byte[] bytes;
        try (InputStream in = Files.newInputStream(controlLog)) {
            bytes = in.readNBytes(MAX_BYTES);
        } catch (NoSuchFileException e) {
            return EMPTY;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + controlLog, e);
        }
        return parse(new String(bytes, StandardCharsets.UTF_8));
    }

    static GuestReport parse(String text) {
        var lines = new ArrayList<String>();
        int end = text.lastIndexOf('\n'); // a line still being written is left for the next read
        if (end < 0) {
            return EMPTY;
        }
        for (String line : text.substring(0, end).split("\n", -1)) {
            String trimmed = line.strip();
            if (trimmed.startsWith(PREFIX)) {
                lines.add(trimmed.substring(PREFIX.length()));
            }
        }
        return new GuestReport(lines);
    }

    /** The generation of the last {@code ready} line. */
    OptionalLong readyGeneration() {
        OptionalLong ready = OptionalLong.empty();
        for (String line : lines) {
            if (line.startsWith("ready generation=")) {
                try {
                    ready = OptionalLong.of(Long.parseLong(line.substring("ready generation=".length())));
                } catch (NumberFormatException e) {
                    // not a protocol line after all
                }
            }
        }
        return ready;
    }

    boolean readyAt(long generation) {
        OptionalLong ready = readyGeneration();
        return ready.isPresent() && ready.getAsLong() == generation;
    }

    boolean stopping() {
        return lines.contains("stopping");
    }

    /** The workload's exit status, if it exited. */
    OptionalInt exitStatus() {
        for (String line : lines) {
            if (line.startsWith("exited status=")) {
                try {
                    return OptionalInt.of(Integer.parseInt(line.substring("exited status=".length())));
                } catch (NumberFormatException e) {
                    // not a protocol line after all
                }
            }
        }
        return OptionalInt.empty();
    }

    /** Why the guest gave up, if it did. */
    Optional<String> failure() {
        return lines.stream()
                .filter(line -> line.startsWith("failed "))
                .map(line -> line.substring("failed ".length()))
                .findFirst();
    }
}
