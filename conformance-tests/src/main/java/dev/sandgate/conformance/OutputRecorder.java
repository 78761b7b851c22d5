package dev.sandgate.conformance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.StreamKind;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Records what a driver delivers to one exec or logs read: the output of each stream, and its ends. It notes the
 * breaches of the listeners' contract that it can see (a callback while another runs, a callback after the end, more
 * than one end) so that the rules can assert there were none.
 */
final class OutputRecorder implements ExecListener, LogListener {
    /** How an exec or a read ended: an exit code, a completion, or a failure. */
    record End(Optional<Integer> exitCode, boolean completed, Optional<DriverException> failure) {
        static End exited(int code) {
            return new End(Optional.of(code), false, Optional.empty());
        }

        static End completedRead() {
            return new End(Optional.empty(), true, Optional.empty());
        }

        static End failed(DriverException error) {
            return new End(Optional.empty(), false, Optional.of(error));
        }

        @Override
        public String toString() {
            return exitCode.map(code -> "exited with " + code)
                    .or(() -> failure.map(error -> "failed with " + error.code() + ": " + error.getMessage()))
                    .orElse("completed");
        }
    }

    private final Duration timeout;
    private final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
    private final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
    private final List<End> ends = new ArrayList<>();
    private final List<String> breaches = new ArrayList<>();
    private int callbacks;
    private boolean inCallback;

    OutputRecorder(Duration timeout) {
        this.timeout = timeout;
    }

    @Override
    public void output(StreamKind stream, byte[] data) {
        enter("output");
        try {
            synchronized (this) {
                if (!ends.isEmpty()) {
                    breaches.add("output after the end (" + ends.get(0) + ")");
                }
                (stream == StreamKind.STDERR ? stderr : stdout).writeBytes(data);
            }
        } finally {
            leave();
        }
    }

    @Override
    public void exited(int exitCode) {
        end(End.exited(exitCode));
    }

    @Override
    public void completed() {
        end(End.completedRead());
    }

    @Override
    public void failed(DriverException error) {
        end(End.failed(error));
    }

    private void end(End end) {
        enter("end");
        try {
            synchronized (this) {
                if (!ends.isEmpty()) {
                    breaches.add("a second end (" + end + ") after " + ends.get(0));
                }
                ends.add(end);
            }
        } finally {
            leave();
        }
    }

    private synchronized void enter(String callback) {
        if (inCallback) {
            breaches.add(callback + " while another callback ran (a listener is called from one thread at a time)");
        }
        inCallback = true;
        callbacks++;
    }

    private synchronized void leave() {
        inCallback = false;
    }

    synchronized String stdout() {
        return stdout.toString(StandardCharsets.UTF_8);
    }

    synchronized String stderr() {
        return stderr.toString(StandardCharsets.UTF_8);
    }

    /** Both streams, stdout first, for a message. */
    synchronized String describe() {
        return "stdout " + quoted(stdout()) + ", stderr " + quoted(stderr()) + ", ends " + ends;
    }

    synchronized Optional<End> end() {
        return ends.isEmpty() ? Optional.empty() : Optional.of(ends.get(0));
    }

    synchronized List<End> ends() {
        return List.copyOf(ends);
    }

    /** Waits (within the kit's timeout) until the exec or read ended, and returns how. */
    End awaitEnd(String what) {
        return KitPolling.until(
                timeout, this::end, () -> what + " did not end within " + timeout + "; so far: " + describe());
    }

    /** Waits until stdout and stderr together contain every one of {@code texts}. */
    void awaitOutput(String what, String... texts) {
        KitPolling.until(
                timeout,
                () -> {
                    String both = stdout() + stderr();
                    for (String text : texts) {
                        if (!both.contains(text)) {
                            return Optional.empty();
                        }
                    }
                    return Optional.of(texts);
                },
                () -> what + " did not deliver " + List.of(texts) + " within " + timeout + "; so far: " + describe());
    }

    /** The driver made no callback at all (a refused call must not). */
    synchronized void assertNoCallbacks(String what) {
        assertThat(callbacks)
                .as("%s: the listener of a refused call must get no callback, got %s", what, describe())
                .isZero();
    }

    /** No breach of the listener's contract was seen: one thread at a time, nothing after the one end. */
    synchronized void assertKeptTheListenerContract(String what) {
        assertThat(breaches).as("%s: breaches of the listener's contract", what).isEmpty();
    }

    static String quoted(String text) {
        return '"' + text.replace("\\", "\\\\").replace("\n", "\\n").replace("\"", "\\\"") + '"';
    }
}
