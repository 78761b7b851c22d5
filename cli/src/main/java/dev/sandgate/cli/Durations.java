package dev.sandgate.cli;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** Parses durations written as {@code 500ms}, {@code 30s}, {@code 2m}, {@code 1h} or ISO-8601 ({@code PT30S}). */
final class Durations {
    private Durations() {}

    static Duration parse(String text) {
        String value = text.trim().toLowerCase(Locale.ROOT);
        try {
            if (value.startsWith("p")) {
                return positive(Duration.parse(value.toUpperCase(Locale.ROOT)), text);
            }
            if (value.endsWith("ms")) {
                return positive(Duration.ofMillis(Long.parseLong(value.substring(0, value.length() - 2))), text);
            }
            long amount = Long.parseLong(value.substring(0, value.length() - 1));
            return switch (value.charAt(value.length() - 1)) {
                case 's' -> positive(Duration.ofSeconds(amount), text);
                case 'm' -> positive(Duration.ofMinutes(amount), text);
                case 'h' -> positive(Duration.ofHours(amount), text);
                default -> throw invalid(text);
            };
        } catch (NumberFormatException | DateTimeParseException | StringIndexOutOfBoundsException e) {
            throw invalid(text);
        }
    }

    private static Duration positive(Duration duration, String text) {
        if (duration.isNegative() || duration.isZero()) {
            throw new TypeConversionException("'" + text + "': a duration must be positive, e.g. 500ms, 30s or 2m");
        }
        return duration;
    }

    private static TypeConversionException invalid(String text) {
        return new TypeConversionException("'" + text + "' is not a duration: write e.g. 500ms, 30s, 2m, 1h or PT30S");
    }

    static final class Converter implements ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            return parse(value);
        }
    }
}
