package dev.sandgate.benchmarks;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * The command line of a benchmark: options that take the argument after them ({@code --calls 100}; the last one given
 * wins) and switches that take none ({@code --smoke}). Every error is an {@link IllegalArgumentException} that names
 * the option; {@link #settingsOrExit} turns it into the usage and exit status 2.
 */
public final class BenchmarkOptions {
    private final Map<String, String> values;
    private final Set<String> switches;

    private BenchmarkOptions(Map<String, String> values, Set<String> switches) {
        this.values = values;
        this.switches = switches;
    }

    /** Reads {@code args}, in which each of {@code valued} takes a value and each of {@code switches} none. */
    public static BenchmarkOptions parse(String[] args, Set<String> valued, Set<String> switches) {
        Map<String, String> values = new HashMap<>();
        Set<String> given = new HashSet<>();
        for (int i = 0; i < args.length; i++) {
            String option = args[i];
            if (switches.contains(option)) {
                given.add(option);
            } else if (!valued.contains(option)) {
                throw new IllegalArgumentException("unknown option: " + option);
            } else if (i + 1 >= args.length) {
                throw new IllegalArgumentException(option + " needs a value");
            } else {
                values.put(option, args[++i]);
            }
        }
        return new BenchmarkOptions(values, given);
    }

    /**
     * The settings a benchmark's {@code main} runs with: with {@code --help}, prints {@code usage} and exits 0; when
     * {@code parse} refuses the arguments, prints the error and {@code usage} to standard error and exits 2.
     */
    public static <T> T settingsOrExit(String[] args, String usage, Function<String[], T> parse) {
        if (List.of(args).contains("--help")) {
            System.out.print(usage);
            System.exit(0);
        }
        try {
            return parse.apply(args);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.err.print(usage);
            System.exit(2);
            throw e;
        }
    }

    /** Whether the switch {@code option} was given. */
    public boolean has(String option) {
        return switches.contains(option);
    }

    public Optional<String> string(String option) {
        return Optional.ofNullable(values.get(option));
    }

    public Optional<Path> path(String option) {
        return string(option).map(Path::of);
    }

    /** A whole number, or {@code fallback} when the option was not given. */
    public int integer(String option, int fallback) {
        return string(option)
                .map(value -> parsed(option, value, Integer::parseInt))
                .orElse(fallback);
    }

    /** A whole number from {@code min} to {@code max}, or {@code fallback} when the option was not given. */
    public int integer(String option, int fallback, int min, int max) {
        int value = integer(option, fallback);
        if (value < min || value > max) {
            throw new IllegalArgumentException(option + " must be " + min + " to " + max + ", got " + value);
        }
        return value;
    }

    public double number(String option, double fallback) {
        return string(option)
                .map(value -> parsed(option, value, Double::parseDouble))
                .orElse(fallback);
    }

    /** Comma-separated whole numbers ({@code 1,16,64}; blanks around them and a trailing comma are ignored). */
    @SuppressWarnings("StringSplitter") // a trailing comma is tolerated, as String.split does
    public List<Integer> integers(String option, List<Integer> fallback) {
        return string(option)
                .map(value -> {
                    List<Integer> numbers = new ArrayList<>();
                    for (String number : value.split(",")) {
                        numbers.add(parsed(option, number.trim(), Integer::parseInt));
                    }
                    return List.copyOf(numbers);
                })
                .orElse(fallback);
    }

    /** Whole seconds, with or without the unit: {@code 60} or {@code 60s}. */
    public Duration seconds(String option, Duration fallback) {
        return string(option)
                .map(value -> Duration.ofSeconds(parsed(option, value.replaceFirst("s$", ""), Long::parseLong)))
                .orElse(fallback);
    }

    /** Whole milliseconds, with or without the unit: {@code 1000} or {@code 1000ms}. */
    public Duration millis(String option, Duration fallback) {
        return string(option)
                .map(value -> Duration.ofMillis(parsed(option, value.replaceFirst("ms$", ""), Long::parseLong)))
                .orElse(fallback);
    }

    private static <N> N parsed(String option, String value, Function<String, N> parse) {
        try {
            return parse.apply(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " takes a number, got '" + value + "'", e);
        }
    }
}
