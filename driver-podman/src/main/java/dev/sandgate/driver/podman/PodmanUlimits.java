package dev.sandgate.driver.podman;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.model.Ulimit;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The resource limits every Podman container gets, from {@code podman.ulimits}: a comma-separated list of {@code
 * name=soft:hard}, default {@value #DEFAULT}.
 *
 * <p>Why explicit: rootful Podman asks for nofile=1048576 and nproc=4194304 inside containers, which fails (EPERM)
 * where root's hard limits are lower or root lacks CAP_SYS_RESOURCE. A client that sets any ulimit through the API
 * replaces Podman's whole default list, so the list must name both {@code nofile} and {@code nproc}.
 *
 * @param limits the limits by name, in order
 */
public record PodmanUlimits(Map<String, Range> limits) {
    public static final String KEY = "podman.ulimits";
    public static final String DEFAULT = "nofile=16384:16384,nproc=32768:32768";

    private static final Pattern ENTRY = Pattern.compile("([a-z]+)=(\\d{1,18}):(\\d{1,18})");

    /** A soft and a hard limit. */
    public record Range(long soft, long hard) {
        public Range {
            if (soft < 0 || hard < 0 || soft > hard) {
                throw new IllegalArgumentException("need 0 <= soft <= hard, got " + soft + ":" + hard);
            }
        }
    }

    public PodmanUlimits {
        limits = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(requireNonNull(limits, "limits is null")));
        if (!limits.containsKey("nofile") || !limits.containsKey("nproc")) {
            throw DriverException.invalidArgument(
                    KEY,
                    "must set both nofile and nproc: setting any limit replaces Podman's defaults, which root may"
                            + " not be allowed to apply");
        }
    }

    /** Reads {@value #KEY} from {@code config}; INVALID_ARGUMENT naming the key when malformed. */
    public static PodmanUlimits from(DriverSettings config) {
        return parse(config.get(KEY, DEFAULT));
    }

    @SuppressWarnings("StringSplitter") // the setting tolerates a trailing comma, as String.split does
    static PodmanUlimits parse(String text) {
        Map<String, Range> limits = new LinkedHashMap<>();
        for (String entry : text.split(",")) {
            Matcher matcher = ENTRY.matcher(entry.trim());
            if (!matcher.matches()) {
                throw DriverException.invalidArgument(
                        KEY, "entries must look like nofile=16384:16384, got '" + entry.trim() + "'");
            }
            String name = matcher.group(1);
            Range range;
            try {
                range = new Range(Long.parseLong(matcher.group(2)), Long.parseLong(matcher.group(3)));
            } catch (IllegalArgumentException e) {
                throw DriverException.invalidArgument(KEY, name + ": " + e.getMessage());
            }
            if (limits.put(name, range) != null) {
                throw DriverException.invalidArgument(KEY, "names " + name + " twice");
            }
        }
        return new PodmanUlimits(limits);
    }

    /** The limits as docker-java takes them. */
    public List<Ulimit> toUlimits() {
        return limits.entrySet().stream()
                .map(entry -> new Ulimit(
                        entry.getKey(),
                        entry.getValue().soft(),
                        entry.getValue().hard()))
                .toList();
    }
}
