package dev.sandgate.driver.vm;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * One QEMU process, identified by its pid and its start time in clock ticks after boot (field 22 of {@code
 * /proc/<pid>/stat}). A pid alone may be reused by an unrelated process; the pair is not, so every signal and every
 * socket connection goes through {@link #alive()} first.
 *
 * @param pid the process id
 * @param startTicks when the process started, in clock ticks after the host booted
 */
record ProcessIdentity(long pid, long startTicks) {
    ProcessIdentity {
        if (pid < 1) {
            throw new IllegalArgumentException("pid must be positive");
        }
        if (startTicks < 0) {
            throw new IllegalArgumentException("startTicks must not be negative");
        }
    }

    /** The identity of the live process {@code pid}; empty if there is none (or it is a zombie). */
    static Optional<ProcessIdentity> of(long pid) {
        return Stat.read(pid).filter(Stat::live).map(stat -> new ProcessIdentity(pid, stat.startTicks()));
    }

    /** Whether this very process still runs: same pid, same start time, not a zombie. */
    boolean alive() {
        return Stat.read(pid)
                .filter(stat -> stat.live() && stat.startTicks() == startTicks)
                .isPresent();
    }

    /** {@code /proc/<pid>/cwd/<name>}: a file in the process's working directory, reached through the process. */
    Path inWorkingDirectory(String name) {
        return Path.of("/proc", Long.toString(pid), "cwd", name);
    }

    /**
     * Sends SIGKILL if this very process still runs. The check and the signal are not atomic, but a pid is reused
     * only after the process has been reaped and the pid space has wrapped around, which takes far longer than the
     * microseconds between them.
     */
    void kill() {
        if (alive()) {
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
    }

    @Override
    public String toString() {
        return "pid " + pid + " started at tick " + startTicks;
    }

    /** The fields of {@code /proc/<pid>/stat} that matter here. */
    private record Stat(char state, long startTicks) {
        boolean live() {
            return state != 'Z' && state != 'X' && state != 'x';
        }

        static Optional<Stat> read(long pid) {
            String text;
            try {
                text = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
            } catch (IOException e) {
                return Optional.empty(); // no such process
            }
            // "pid (comm) state ppid ...": comm may contain spaces and parentheses, so split after the last ')'.
            int end = text.lastIndexOf(')');
            if (end < 0 || end + 2 >= text.length()) {
                return Optional.empty();
            }
            String[] fields = text.substring(end + 2).trim().split(" ", -1);
            if (fields.length < 20) {
                return Optional.empty();
            }
            try {
                return Optional.of(new Stat(fields[0].charAt(0), Long.parseLong(fields[19])));
            } catch (NumberFormatException e) {
                return Optional.empty();
            }
        }
    }
}
