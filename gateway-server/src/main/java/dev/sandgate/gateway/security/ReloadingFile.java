package dev.sandgate.gateway.security;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small file (an access policy, a JWKS, token hashes) parsed at start and parsed again whenever its content changes
 * on disk, checked every period. A change that does not parse keeps the last good value, with a warning: a half-written
 * file never opens or closes the gateway. Reading the bytes (not the modification time) follows Kubernetes' symlink
 * swaps of mounted Secrets and ConfigMaps.
 */
final class ReloadingFile<T> implements AutoCloseable {
    /** Parses a file's bytes; throws with a message naming what is wrong. */
    @FunctionalInterface
    interface Parser<T> {
        T parse(byte[] content) throws Exception;
    }

    private static final Logger log = LoggerFactory.getLogger(ReloadingFile.class);

    /** Parses several files' bytes together (a certificate and its key). */
    @FunctionalInterface
    interface GroupParser<T> {
        T parse(List<byte[]> contents) throws Exception;
    }

    private final List<Path> files;
    private final String what;
    private final GroupParser<T> parser;
    private volatile T value;
    private List<byte[]> contents;
    private ScheduledFuture<?> task;

    private ReloadingFile(List<Path> files, String what, GroupParser<T> parser, List<byte[]> contents, T value) {
        this.files = files;
        this.what = what;
        this.parser = parser;
        this.contents = contents;
        this.value = value;
    }

    /**
     * Reads and parses {@code file} now, then every {@code period} on {@code scheduler}.
     *
     * @throws IllegalArgumentException when the file cannot be read or parsed now, naming it
     */
    static <T> ReloadingFile<T> watch(
            Path file, String what, Parser<T> parser, Duration period, ScheduledExecutorService scheduler) {
        requireNonNull(parser, "parser is null");
        return watchAll(List.of(file), what, contents -> parser.parse(contents.getFirst()), period, scheduler);
    }

    /**
     * Like {@link #watch}, for files that change together: parsed together whenever one changes (a pair caught half
     * replaced fails to parse and is tried again at the next check).
     */
    static <T> ReloadingFile<T> watchAll(
            List<Path> files, String what, GroupParser<T> parser, Duration period, ScheduledExecutorService scheduler) {
        List<byte[]> contents;
        T value;
        try {
            contents = read(files);
            value = parser.parse(contents);
        } catch (Exception e) {
            throw new IllegalArgumentException(what + " " + files + " cannot be used: " + e.getMessage(), e);
        }
        ReloadingFile<T> watched = new ReloadingFile<>(List.copyOf(files), what, parser, contents, value);
        watched.task = scheduler.scheduleWithFixedDelay(
                watched::check, period.toMillis(), period.toMillis(), TimeUnit.MILLISECONDS);
        return watched;
    }

    T get() {
        return value;
    }

    private static List<byte[]> read(List<Path> files) throws IOException {
        List<byte[]> contents = new ArrayList<>();
        for (Path file : files) {
            contents.add(Files.readAllBytes(file));
        }
        return contents;
    }

    private void check() {
        List<byte[]> now;
        try {
            now = read(files);
        } catch (IOException e) {
            log.warn("{} {} cannot be read ({}): keeping the last one read", what, files, e.toString());
            return;
        }
        boolean same = true;
        for (int i = 0; i < now.size(); i++) {
            same &= Arrays.equals(now.get(i), contents.get(i));
        }
        if (same) {
            return;
        }
        try {
            value = parser.parse(now);
            contents = now;
            log.info("{} {} changed: reloaded", what, files);
        } catch (Exception e) {
            // Not remembered as seen: the next check tries again (the other file of a pair may be on its way).
            log.warn("{} {} changed but cannot be used ({}): keeping the last good one", what, files, e.getMessage());
        }
    }

    @Override
    public void close() {
        if (task != null) {
            task.cancel(false);
        }
    }
}
