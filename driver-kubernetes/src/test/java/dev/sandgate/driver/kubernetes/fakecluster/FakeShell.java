package dev.sandgate.driver.kubernetes.fakecluster;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What runs in the fake cluster's containers: a stand-in for the few busybox programs the conformance kit uses, and
 * nothing else. Programs: {@code echo WORDS...}, {@code cat} (standard input to standard output), {@code touch PATH},
 * {@code test -e PATH}, {@code test A = B} and {@code [ ... ]} alike, {@code sleep N} (seconds, or {@code infinity}),
 * {@code env NAME=VALUE... PROGRAM...}, and {@code sh -c SCRIPT [NAME [ARG...]]}, where SCRIPT is commands separated
 * by {@code ;}, each a chain of commands joined by {@code &&} (run while they succeed), each one of those programs,
 * {@code echo ... >&2}, {@code exit N} or {@code exec PROGRAM...}; {@code $NAME} expands from the environment, {@code
 * $0} to NAME, a word {@code "$@"} to the ARGs, single and double quotes group words. An unknown program is "not found" (exit 127). Files exist only as the set of paths touched in
 * the container.
 */
final class FakeShell {
    /** A process's standard streams. */
    interface Io {
        /** The next chunk of standard input, or null at its end. */
        byte[] readStdin() throws InterruptedException;

        void stdout(byte[] data);

        void stderr(byte[] data);
    }

    private final Set<String> files;

    /** @param files the container's file system: the paths that exist */
    FakeShell(Set<String> files) {
        this.files = files;
    }

    /** Runs {@code argv} and returns its exit code; interrupted when the process is killed. */
    int run(List<String> argv, Map<String, String> environment, Io io) throws InterruptedException {
        if (argv.isEmpty()) {
            return 0;
        }
        String program = argv.get(0);
        List<String> args = argv.subList(1, argv.size());
        return switch (program) {
            case "sh" -> {
                if (args.size() >= 2 && args.get(0).equals("-c")) {
                    yield script(args.get(1), environment, args.subList(2, args.size()), io);
                }
                io.stderr("sh: only sh -c SCRIPT is simulated\n".getBytes(UTF_8));
                yield 2;
            }
            case "env" -> {
                Map<String, String> extended = new HashMap<>(environment);
                int index = 0;
                while (index < args.size() && args.get(index).contains("=")) {
                    String assignment = args.get(index);
                    extended.put(
                            assignment.substring(0, assignment.indexOf('=')),
                            assignment.substring(assignment.indexOf('=') + 1));
                    index++;
                }
                yield run(args.subList(index, args.size()), extended, io);
            }
            case "echo" -> {
                io.stdout((String.join(" ", args) + "\n").getBytes(UTF_8));
                yield 0;
            }
            case "cat" -> {
                for (byte[] chunk = io.readStdin(); chunk != null; chunk = io.readStdin()) {
                    io.stdout(chunk);
                }
                yield 0;
            }
            case "touch" -> {
                files.addAll(args);
                yield 0;
            }
            case "test" -> test(args);
            case "[" -> {
                if (args.isEmpty() || !args.get(args.size() - 1).equals("]")) {
                    io.stderr("[: missing ]\n".getBytes(UTF_8));
                    yield 2;
                }
                yield test(args.subList(0, args.size() - 1));
            }
            case "sleep" -> {
                sleep(args.isEmpty() ? "0" : args.get(0));
                yield 0;
            }
            default -> {
                io.stderr((program + ": not found\n").getBytes(UTF_8));
                yield 127;
            }
        };
    }

    private int test(List<String> args) {
        if (args.size() == 2 && args.get(0).equals("-e")) {
            return files.contains(args.get(1)) ? 0 : 1;
        }
        if (args.size() == 3 && args.get(1).equals("=")) {
            return args.get(0).equals(args.get(2)) ? 0 : 1;
        }
        return 2;
    }

    /** Runs a script; {@code positional} is {@code $0} and the ARGs. */
    private int script(String script, Map<String, String> environment, List<String> positional, Io io)
            throws InterruptedException {
        int status = 0;
        for (String chain : script.split(";", -1)) {
            status = 0;
            for (String command : chain.split("&&", -1)) {
                if (status != 0) {
                    break;
                }
                Integer exit = command(command, environment, positional, io);
                if (exit == null) {
                    continue;
                }
                if (exit < 0) {
                    return -exit - 1;
                }
                status = exit;
            }
        }
        return status;
    }

    /** Runs one command of a script: its status, or -(status + 1) when the script ends with it, or null if empty. */
    private Integer command(String command, Map<String, String> environment, List<String> positional, Io io)
            throws InterruptedException {
        List<String> words = words(command, environment, positional);
        if (words.isEmpty()) {
            return null;
        }
        Io target = io;
        if (words.get(words.size() - 1).equals(">&2")) {
            words = words.subList(0, words.size() - 1);
            target = toStderr(io);
        }
        return switch (words.get(0)) {
            case "exit" -> -(words.size() > 1 ? Integer.parseInt(words.get(1)) : 0) - 1;
            case "exec" -> -run(words.subList(1, words.size()), environment, target) - 1;
            default -> run(words, environment, target);
        };
    }

    private static Io toStderr(Io io) {
        return new Io() {
            @Override
            public byte[] readStdin() throws InterruptedException {
                return io.readStdin();
            }

            @Override
            public void stdout(byte[] data) {
                io.stderr(data);
            }

            @Override
            public void stderr(byte[] data) {
                io.stderr(data);
            }
        };
    }

    /**
     * Splits a command into words: quotes group, {@code $NAME} and {@code $0} expand outside single quotes, a word
     * {@code "$@"} becomes the positional ARGs.
     */
    static List<String> words(String command, Map<String, String> environment, List<String> positional) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean inWord = false;
        char quote = 0;
        for (int i = 0; i < command.length(); i++) {
            char c = command.charAt(i);
            if (!inWord
                    && command.startsWith("\"$@\"", i)
                    && (i + 4 == command.length() || Character.isWhitespace(command.charAt(i + 4)))) {
                words.addAll(positional.isEmpty() ? List.of() : positional.subList(1, positional.size()));
                i += 3;
            } else if (quote != '\'' && c == '$' && command.startsWith("$0", i)) {
                word.append(positional.isEmpty() ? "sh" : positional.get(0));
                inWord = true;
                i++;
            } else if (quote == '\'') {
                if (c == '\'') {
                    quote = 0;
                } else {
                    word.append(c);
                }
            } else if (c == '$' && i + 1 < command.length() && isNameStart(command.charAt(i + 1))) {
                int end = i + 1;
                while (end < command.length() && isNamePart(command.charAt(end))) {
                    end++;
                }
                word.append(environment.getOrDefault(command.substring(i + 1, end), ""));
                inWord = true;
                i = end - 1;
            } else if (quote == '"') {
                if (c == '"') {
                    quote = 0;
                } else {
                    word.append(c);
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
                inWord = true;
            } else if (Character.isWhitespace(c)) {
                if (inWord) {
                    words.add(word.toString());
                    word.setLength(0);
                    inWord = false;
                }
            } else {
                word.append(c);
                inWord = true;
            }
        }
        if (inWord) {
            words.add(word.toString());
        }
        return words;
    }

    private static boolean isNameStart(char c) {
        return Character.isLetter(c) || c == '_';
    }

    private static boolean isNamePart(char c) {
        return Character.isLetterOrDigit(c) || c == '_';
    }

    private static void sleep(String duration) throws InterruptedException {
        if (duration.equals("infinity")) {
            Thread.sleep(Long.MAX_VALUE);
            return;
        }
        Thread.sleep(Math.round(Double.parseDouble(duration) * 1000));
    }
}
