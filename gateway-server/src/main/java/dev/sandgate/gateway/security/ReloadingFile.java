package dev.sandgate.gateway.security;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
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

    private final Path file;
    private final String what;
    private final Parser<T> parser;
    private volatile T value;
    private byte[] content;
    private ScheduledFuture<?> task;

    private ReloadingFile(Path file, String what, Parser<T> parser, byte[] content, T value) {
        this.file = file;
        this.what = what;
        this.parser = parser;
        this.content = content;
        this.value = value;
    }

    /**
     * Reads and parses {@code file} now, then every {@code period} on {@code scheduler}.
     *
     * @throws IllegalArgumentException when the file cannot be read or parsed now, naming it
     */
    static <T> ReloadingFile<T> watch(
            Path file, String what, Parser<T> parser, Duration period, ScheduledExecutorService scheduler) {
        requireNonNull(file, "file is null");
        byte[] content;
        T value;
        try {
            content = Files.readAllBytes(file);
            value = parser.parse(content);
        } catch (Exception e) {
            throw new IllegalArgumentException(what + " " + file + " cannot be used: " + e.getMessage(), e);
        }
        ReloadingFile<T> watched = new ReloadingFile<>(file, what, parser, content, value);
        watched.task = scheduler.scheduleWithFixedDelay(
                watched::check, period.toMillis(), period.toMillis(), TimeUnit.MILLISECONDS);
        return watched;
    }

    T get() {
        return value;
    }

    private void check() {
        byte[] now;
        try {
            now = Files.readAllBytes(file);
        } catch (IOException e) {
            log.warn("{} {} cannot be read ({}): keeping the last one read", what, file, e.toString());
            return;
        }
        if (Arrays.equals(now, content)) {
            return;
        }
        content = now;
        try {
            value = parser.parse(now);
            log.info("{} {} changed: reloaded", what, file);
        } catch (Exception e) {
            log.warn("{} {} changed but cannot be used ({}): keeping the last good one", what, file, e.getMessage());
        }
    }

    @Override
    public void close() {
        if (task != null) {
            task.cancel(false);
        }
    }
}
