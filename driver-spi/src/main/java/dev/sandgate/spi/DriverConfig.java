package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Map;
import java.util.Optional;

/**
 * A driver's settings, as flat string properties (from the gateway's configuration file, flags or environment). Keys
 * are the driver's own, conventionally prefixed with its name ({@code docker.host}). Errors name the key.
 *
 * @param properties the settings
 */
public record DriverConfig(Map<String, String> properties) {
    public static final DriverConfig EMPTY = new DriverConfig(Map.of());

    public DriverConfig {
        properties = Map.copyOf(requireNonNull(properties, "properties is null"));
    }

    public Optional<String> get(String key) {
        return Optional.ofNullable(properties.get(key)).filter(value -> !value.isBlank());
    }

    public String get(String key, String defaultValue) {
        return get(key).orElse(defaultValue);
    }

    public String require(String key) {
        return get(key).orElseThrow(() -> DriverException.invalidArgument(key, "is required"));
    }

    public long getLong(String key, long defaultValue) {
        Optional<String> value = get(key);
        if (value.isEmpty()) {
            return defaultValue;
        }
        try {
            return Long.parseLong(value.get().trim());
        } catch (NumberFormatException e) {
            throw DriverException.invalidArgument(key, "must be a whole number, got '" + value.get() + "'");
        }
    }

    public boolean getBoolean(String key, boolean defaultValue) {
        Optional<String> value = get(key);
        if (value.isEmpty()) {
            return defaultValue;
        }
        return switch (value.get().trim().toLowerCase(java.util.Locale.ROOT)) {
            case "true", "yes", "1" -> true;
            case "false", "no", "0" -> false;
            default -> throw DriverException.invalidArgument(key, "must be true or false, got '" + value.get() + "'");
        };
    }

    /** A duration in ISO-8601 ({@code PT10S}) or as a number with a unit suffix: {@code 500ms}, {@code 10s}, {@code 2m}. */
    public Duration getDuration(String key, Duration defaultValue) {
        Optional<String> value = get(key);
        if (value.isEmpty()) {
            return defaultValue;
        }
        String text = value.get().trim();
        try {
            Duration parsed = parseDuration(text);
            if (parsed.isNegative()) {
                throw DriverException.invalidArgument(key, "must not be negative");
            }
            return parsed;
        } catch (NumberFormatException | DateTimeParseException | StringIndexOutOfBoundsException e) {
            throw DriverException.invalidArgument(key, "must be a duration such as 500ms, 10s, 2m or PT10S");
        }
    }

    private static Duration parseDuration(String text) {
        if (text.startsWith("P") || text.startsWith("p")) {
            return Duration.parse(text);
        }
        if (text.endsWith("ms")) {
            return Duration.ofMillis(Long.parseLong(text.substring(0, text.length() - 2)));
        }
        long amount = Long.parseLong(text.substring(0, text.length() - 1));
        return switch (text.charAt(text.length() - 1)) {
            case 's' -> Duration.ofSeconds(amount);
            case 'm' -> Duration.ofMinutes(amount);
            case 'h' -> Duration.ofHours(amount);
            default -> throw new NumberFormatException();
        };
    }

    /** A copy with one more property; for tests and defaults. */
    public DriverConfig with(String key, String value) {
        var copy = new java.util.HashMap<>(properties);
        copy.put(key, value);
        return new DriverConfig(copy);
    }
}
