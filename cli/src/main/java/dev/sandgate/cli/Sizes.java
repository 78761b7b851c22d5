package dev.sandgate.cli;

import java.util.Locale;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** Parses byte sizes: a number with an optional suffix K, M, G (powers of 1000) or Ki, Mi, Gi (powers of 1024). */
final class Sizes {
    private Sizes() {}

    static long parse(String text) {
        String value = text.trim();
        String lower = value.toLowerCase(Locale.ROOT);
        long multiplier = 1;
        String number = value;
        String[][] suffixes = {
            {"ki", "1024"},
            {"mi", "1048576"},
            {"gi", "1073741824"},
            {"k", "1000"},
            {"m", "1000000"},
            {"g", "1000000000"}
        };
        for (String[] suffix : suffixes) {
            if (lower.endsWith(suffix[0])) {
                multiplier = Long.parseLong(suffix[1]);
                number = value.substring(0, value.length() - suffix[0].length());
                break;
            }
        }
        try {
            long amount = Long.parseLong(number.trim());
            if (amount < 0) {
                throw invalid(text);
            }
            return Math.multiplyExact(amount, multiplier);
        } catch (NumberFormatException | ArithmeticException e) {
            throw invalid(text);
        }
    }

    private static TypeConversionException invalid(String text) {
        return new TypeConversionException("'" + text + "' is not a size: write e.g. 536870912, 512Mi or 2G");
    }

    static final class Converter implements ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            return parse(value);
        }
    }
}
