package dev.sandgate.driver.reference;

import dev.sandgate.spi.StreamKind;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The reference driver's simulated commands: exactly the conformance kit's portable subset, interpreted, so that no
 * host process ever runs. Argv {@code echo WORDS...}, {@code cat}, {@code touch PATH}, {@code test -e PATH}, {@code
 * sleep N}, and {@code sh -c SCRIPT} whose commands, separated by {@code ;} or new lines, are those or {@code exit N}
 * or {@code exec COMMAND}; a script command ending in {@code >&2} writes its stdout to stderr, and {@code $NAME} or
 * {@code ${NAME}} expands from the environment. Files exist only under {@code /tmp}. Anything else is a command that
 * is not found: exit code 127 and a message on stderr, as a shell answers.
 */
final class SimulatedShell {
    /** What the commands act on: the one execution a command runs in. */
    interface Machine {
        void write(StreamKind stream, String text);

        /** The next chunk of standard input; empty at its end. */
        Optional<byte[]> readStdin();

        void writeStdout(byte[] data);

        /** Creates the file {@code name} (relative to {@code /tmp}) if it does not exist. */
        void touch(String name);

        boolean exists(String name);

        /** Waits {@code duration}; may end the command instead (its execution stopped, its process was closed). */
        void sleep(Duration duration);
    }

    /** Thrown by {@code exit N} to end a script. */
    private static final class Exit extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final int code;

        Exit(int code) {
            super(null, null, false, false);
            this.code = code;
        }
    }

    private static final Pattern VARIABLE =
            Pattern.compile("\\$(?:\\{([A-Za-z_][A-Za-z0-9_]*)}|([A-Za-z_][A-Za-z0-9_]*))");
    private static final String TMP = "/tmp";
    /** Longer than any sandbox lives; what fits in a {@link Duration} of nanoseconds. */
    private static final double MAX_SLEEP_SECONDS = 9.0e9;

    private final Map<String, String> environment;
    private final Machine machine;

    SimulatedShell(Map<String, String> environment, Machine machine) {
        this.environment = Map.copyOf(environment);
        this.machine = machine;
    }

    /** Runs {@code argv} as given (no shell: no expansion) and returns its exit code. */
    int run(List<String> argv) {
        if (argv.size() >= 3 && argv.get(0).equals("sh") && argv.get(1).equals("-c")) {
            return script(argv.get(2));
        }
        return command(argv, StreamKind.STDOUT);
    }

    private int script(String script) {
        int status = 0;
        try {
            for (String line : script.split("[;\n]", -1)) {
                List<String> words = new ArrayList<>();
                for (String word : line.trim().split("\\s+", -1)) {
                    if (!word.isEmpty()) {
                        String expanded = expand(word);
                        if (!expanded.isEmpty() || !word.contains("$")) {
                            words.add(expanded);
                        }
                    }
                }
                if (words.isEmpty()) {
                    continue;
                }
                StreamKind out = StreamKind.STDOUT;
                if (words.get(words.size() - 1).equals(">&2")) {
                    words.remove(words.size() - 1);
                    out = StreamKind.STDERR;
                }
                if (words.get(0).equals("exit")) {
                    throw new Exit(exitCode(words));
                }
                if (words.get(0).equals("exec") && words.size() > 1) {
                    throw new Exit(command(words.subList(1, words.size()), out));
                }
                status = command(words, out);
            }
        } catch (Exit exit) {
            return exit.code;
        }
        return status;
    }

    private int exitCode(List<String> words) {
        if (words.size() == 1) {
            return 0;
        }
        try {
            return Integer.parseInt(words.get(1)) & 0xff;
        } catch (NumberFormatException e) {
            machine.write(StreamKind.STDERR, "sh: exit: Illegal number: " + words.get(1) + "\n");
            return 2;
        }
    }

    private int command(List<String> words, StreamKind out) {
        String program = words.get(0);
        List<String> args = words.subList(1, words.size());
        switch (program) {
            case "echo" -> {
                machine.write(out, String.join(" ", args) + "\n");
                return 0;
            }
            case "cat" -> {
                if (!args.isEmpty()) {
                    return notSimulated(program, args);
                }
                for (Optional<byte[]> chunk = machine.readStdin(); chunk.isPresent(); chunk = machine.readStdin()) {
                    if (out == StreamKind.STDOUT) {
                        machine.writeStdout(chunk.get());
                    } else {
                        machine.write(out, new String(chunk.get(), StandardCharsets.UTF_8));
                    }
                }
                return 0;
            }
            case "touch" -> {
                if (args.size() != 1) {
                    return notSimulated(program, args);
                }
                Optional<String> name = underTmp(args.get(0));
                if (name.isEmpty() || name.get().isEmpty()) {
                    machine.write(StreamKind.STDERR, "touch: " + args.get(0) + ": Permission denied\n");
                    return 1;
                }
                machine.touch(name.get());
                return 0;
            }
            case "test" -> {
                if (args.size() != 2 || !args.get(0).equals("-e")) {
                    return notSimulated(program, args);
                }
                Optional<String> name = underTmp(args.get(1));
                return name.isPresent() && (name.get().isEmpty() || machine.exists(name.get())) ? 0 : 1;
            }
            case "sleep" -> {
                if (args.size() != 1) {
                    return notSimulated(program, args);
                }
                try {
                    double seconds = Double.parseDouble(args.get(0));
                    if (!(seconds >= 0) || seconds > MAX_SLEEP_SECONDS) {
                        throw new NumberFormatException();
                    }
                    machine.sleep(Duration.ofNanos((long) (seconds * 1_000_000_000L)));
                    return 0;
                } catch (NumberFormatException e) {
                    machine.write(StreamKind.STDERR, "sleep: invalid number '" + args.get(0) + "'\n");
                    return 1;
                }
            }
            default -> {
                machine.write(StreamKind.STDERR, "sh: " + program + ": not found\n");
                return 127;
            }
        }
    }

    private int notSimulated(String program, List<String> args) {
        machine.write(
                StreamKind.STDERR,
                "sh: " + program + " " + String.join(" ", args) + ": not found (the reference driver simulates only"
                        + " the conformance kit's commands)\n");
        return 127;
    }

    /** The path relative to {@code /tmp} ("" for /tmp itself); empty for a path outside it or with {@code ..}. */
    private static Optional<String> underTmp(String path) {
        if (path.equals(TMP) || path.equals(TMP + "/")) {
            return Optional.of("");
        }
        if (!path.startsWith(TMP + "/")) {
            return Optional.empty();
        }
        String name = path.substring(TMP.length() + 1);
        if (Arrays.stream(name.split("/", -1)).anyMatch(part -> part.isEmpty() || part.equals(".") || part.equals(".."))
                || name.contains("/")) {
            return Optional.empty(); // only files directly in /tmp are simulated
        }
        return Optional.of(name);
    }

    private String expand(String word) {
        Matcher matcher = VARIABLE.matcher(word);
        var expanded = new StringBuilder();
        while (matcher.find()) {
            String name = matcher.group(1) != null ? matcher.group(1) : matcher.group(2);
            matcher.appendReplacement(expanded, Matcher.quoteReplacement(environment.getOrDefault(name, "")));
        }
        matcher.appendTail(expanded);
        return expanded.toString();
    }
}
