package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A driver's settings, as flat string properties (from the gateway's configuration file, flags or environment). Keys
 * are the driver's own, conventionally prefixed with its name ({@code docker.host}). Errors name the key.
 *
 * @param properties the settings
 */
public record DriverSettings(Map<String, String> properties) {
    public static final DriverSettings EMPTY = new DriverSettings(Map.of());

    public DriverSettings {
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

    public long asLong(String key, long defaultValue) {
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

    public boolean asBoolean(String key, boolean defaultValue) {
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
    public Duration asDuration(String key, Duration defaultValue) {
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

    /**
     * Refuses a setting the driver does not have, so that a misspelt key is an error instead of being ignored: a key
     * under {@code prefix} (the driver's own, e.g. {@code docker.}) that is neither one of {@code known} nor under one
     * of {@code openPrefixes} (families of keys the driver checks itself, e.g. {@code vm.image.}). Keys under other
     * prefixes (another driver's settings in a shared file) are not looked at.
     *
     * @throws DriverException INVALID_ARGUMENT naming the first such key (in key order) and the driver's settings
     */
    public void rejectUnknown(String prefix, Set<String> known, Set<String> openPrefixes) {
        requireNonNull(prefix, "prefix is null");
        requireNonNull(known, "known is null");
        requireNonNull(openPrefixes, "openPrefixes is null");
        new TreeMap<>(properties)
                .keySet().stream()
                        .filter(key -> key.startsWith(prefix) && !known.contains(key))
                        .filter(key -> openPrefixes.stream().noneMatch(key::startsWith))
                        .findFirst()
                        .ifPresent(key -> {
                            List<String> settings = new ArrayList<>(new TreeSet<>(known));
                            openPrefixes.stream()
                                    .sorted()
                                    .map(open -> open + "*")
                                    .forEach(settings::add);
                            throw DriverException.invalidArgument(
                                    key,
                                    "is not a setting of this driver; its settings are " + String.join(", ", settings));
                        });
    }

    /** A copy with one more property; for tests and defaults. */
    public DriverSettings with(String key, String value) {
        var copy = new java.util.HashMap<>(properties);
        copy.put(key, value);
        return new DriverSettings(copy);
    }
}
