package dev.sandgate.driver.reference;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.PolicyField;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * The reference driver's settings, read from a {@link DriverSettings}.
 *
 * @param directory the backend directory; empty means the process-local fallback
 * @param enforceableFields the policy fields the driver claims to enforce
 * @param launchPolicyOnStart whether a start may launch with another policy than the previous execution had
 * @param watchInterval how often a watch subscription polls the directory
 * @param exec whether the driver claims exec (simulated commands)
 * @param logs whether the driver claims logs (the simulated executions' output)
 */
record ReferenceSettings(
        Optional<Path> directory,
        Set<PolicyField> enforceableFields,
        boolean launchPolicyOnStart,
        Duration watchInterval,
        boolean exec,
        boolean logs) {
    static final String DIRECTORY = "reference.directory";
    static final String ENFORCEABLE_FIELDS = "reference.enforceable-fields";
    static final String LAUNCH_POLICY_ON_START = "reference.launch-policy-on-start";
    static final String WATCH_INTERVAL = "reference.watch-interval";
    static final String EXEC = "reference.exec";
    static final String LOGS = "reference.logs";

    /** Every field but the network allow-list, so that a default reference driver refuses one field. */
    static final Set<PolicyField> DEFAULT_ENFORCEABLE_FIELDS =
            Set.copyOf(EnumSet.complementOf(EnumSet.of(PolicyField.NETWORK_ALLOW_LIST)));

    static final Duration DEFAULT_WATCH_INTERVAL = Duration.ofMillis(50);

    ReferenceSettings {
        requireNonNull(directory, "directory is null");
        enforceableFields = Set.copyOf(requireNonNull(enforceableFields, "enforceableFields is null"));
        requireNonNull(watchInterval, "watchInterval is null");
    }

    /**
     * @throws DriverException INVALID_ARGUMENT naming the key of a bad setting
     */
    static ReferenceSettings from(DriverSettings config) {
        config.rejectUnknown(
                "reference.",
                Set.of(DIRECTORY, ENFORCEABLE_FIELDS, LAUNCH_POLICY_ON_START, WATCH_INTERVAL, EXEC, LOGS),
                Set.of());
        Optional<Path> directory = config.get(DIRECTORY).map(ReferenceSettings::path);
        Set<PolicyField> fields =
                config.get(ENFORCEABLE_FIELDS).map(ReferenceSettings::fields).orElse(DEFAULT_ENFORCEABLE_FIELDS);
        boolean launchPolicyOnStart = config.asBoolean(LAUNCH_POLICY_ON_START, true);
        Duration watchInterval = config.asDuration(WATCH_INTERVAL, DEFAULT_WATCH_INTERVAL);
        if (watchInterval.isNegative() || watchInterval.isZero()) {
            throw DriverException.invalidArgument(WATCH_INTERVAL, "must be positive");
        }
        return new ReferenceSettings(
                directory,
                fields,
                launchPolicyOnStart,
                watchInterval,
                config.asBoolean(EXEC, true),
                config.asBoolean(LOGS, true));
    }

    private static Path path(String value) {
        try {
            return Path.of(value.trim());
        } catch (InvalidPathException e) {
            throw DriverException.invalidArgument(DIRECTORY, "is not a path: " + e.getReason());
        }
    }

    private static Set<PolicyField> fields(String value) {
        if (value.trim().equalsIgnoreCase("none")) {
            return Set.of();
        }
        Set<PolicyField> fields = EnumSet.noneOf(PolicyField.class);
        for (String part : value.split(",", -1)) {
            String name = part.trim().toUpperCase(Locale.ROOT).replace('-', '_');
            if (name.isEmpty()) {
                continue;
            }
            try {
                fields.add(PolicyField.valueOf(name));
            } catch (IllegalArgumentException e) {
                throw DriverException.invalidArgument(
                        ENFORCEABLE_FIELDS,
                        "'" + part.trim() + "' is not a policy field; use 'none' or a comma list of "
                                + Arrays.toString(PolicyField.values()));
            }
        }
        return fields;
    }
}
