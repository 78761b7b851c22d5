package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A command to run in a running execution ({@link ComputeDriver#exec}).
 *
 * @param command the program and its arguments; at least one element, run as given (no shell is added)
 * @param environment extra environment variables; values are secrets, never logged
 * @param workingDirectory the working directory; empty means the image's default
 * @param tty allocate a terminal (the output then arrives as {@link StreamKind#STDOUT} only)
 * @param stdin the caller writes standard input ({@link ExecProcess#writeStdin}); without it, standard input is empty
 * @param terminalSize the initial terminal size, with {@code tty}
 */
public record ExecCommand(
        List<String> command,
        Map<String, String> environment,
        Optional<String> workingDirectory,
        boolean tty,
        boolean stdin,
        Optional<TerminalSize> terminalSize) {
    public ExecCommand {
        command = List.copyOf(requireNonNull(command, "command is null"));
        if (command.isEmpty()) {
            throw new IllegalArgumentException("command: at least the program is required");
        }
        environment = Map.copyOf(requireNonNull(environment, "environment is null"));
        requireNonNull(workingDirectory, "workingDirectory is null");
        requireNonNull(terminalSize, "terminalSize is null");
    }

    /** A command without extra environment, terminal or standard input. */
    public static ExecCommand of(String... command) {
        return new ExecCommand(List.of(command), Map.of(), Optional.empty(), false, false, Optional.empty());
    }

    /** Never prints environment values. */
    @Override
    public String toString() {
        return "ExecCommand[command=" + command + ", environment=" + environment.keySet() + ", workingDirectory="
                + workingDirectory + ", tty=" + tty + ", stdin=" + stdin + "]";
    }
}
