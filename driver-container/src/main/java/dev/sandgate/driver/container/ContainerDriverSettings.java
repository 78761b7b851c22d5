package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A container driver's settings, read from {@link DriverSettings} keys under the driver's prefix ({@code docker.} or
 * {@code podman.}):
 *
 * <ul>
 *   <li>{@code <prefix>.host}: the engine's API socket, {@code unix:///path} or {@code tcp://host:port}; else the
 *       environment variable the engine's own CLI reads ({@code DOCKER_HOST}, {@code CONTAINER_HOST}); else the
 *       engine's default socket
 *   <li>{@code <prefix>.tls-cert-path}: a directory with {@code ca.pem}, {@code cert.pem} and {@code key.pem} for a
 *       {@code tcp://} host that requires TLS
 *   <li>{@code <prefix>.api-version}: the Docker Engine API version to speak (default {@value #DEFAULT_API_VERSION},
 *       which Docker Engine 20.10+ and Podman 4+ serve)
 *   <li>{@code <prefix>.stop-grace-period}: how long a stop waits after SIGTERM before SIGKILL (default 10s)
 *   <li>{@code <prefix>.request-timeout}: how long one engine request may stay silent (default 60s)
 *   <li>{@code <prefix>.pull-timeout}: how long pulling an absent image may take (default 10m)
 *   <li>{@code <prefix>.watch-reconnect-timeout}: how long a watch keeps reconnecting to a lost engine before it
 *       reports an error (default 60s)
 * </ul>
 *
 * @param host the engine's API address
 * @param hostSource where {@code host} came from (a key, an environment variable or "default"), for messages
 * @param tlsCertPath the TLS client certificate directory, if any
 * @param apiVersion the API version to speak
 * @param stopGracePeriod the stop grace period
 * @param requestTimeout the per-request silence timeout
 * @param pullTimeout the image pull timeout
 * @param watchReconnectTimeout the watch reconnection budget
 */
public record ContainerDriverSettings(
        URI host,
        String hostSource,
        Optional<String> tlsCertPath,
        String apiVersion,
        Duration stopGracePeriod,
        Duration requestTimeout,
        Duration pullTimeout,
        Duration watchReconnectTimeout) {
    public static final String DEFAULT_API_VERSION = "1.41";
    private static final Pattern API_VERSION = Pattern.compile("1\\.\\d{1,3}");

    public ContainerDriverSettings {
        requireNonNull(host, "host is null");
        requireNonNull(hostSource, "hostSource is null");
        requireNonNull(tlsCertPath, "tlsCertPath is null");
        requireNonNull(apiVersion, "apiVersion is null");
        requireNonNull(stopGracePeriod, "stopGracePeriod is null");
        requireNonNull(requestTimeout, "requestTimeout is null");
        requireNonNull(pullTimeout, "pullTimeout is null");
        requireNonNull(watchReconnectTimeout, "watchReconnectTimeout is null");
    }

    /** The keys {@link #from} reads under {@code prefix}: {@code <prefix>.host} and the others. */
    public static Set<String> keys(String prefix) {
        return Set.of(
                prefix + ".host",
                prefix + ".api-version",
                prefix + ".stop-grace-period",
                prefix + ".request-timeout",
                prefix + ".pull-timeout",
                prefix + ".watch-reconnect-timeout",
                prefix + ".tls-cert-path");
    }

    /**
     * Reads the settings under {@code prefix}.
     *
     * @param hostVariable the environment variable consulted when {@code <prefix>.host} is not set
     * @param environment the process environment (a parameter so that tests need not change the real one)
     * @throws DriverException INVALID_ARGUMENT naming the offending key
     */
    public static ContainerDriverSettings from(
            DriverSettings config,
            String prefix,
            String defaultHost,
            String hostVariable,
            Map<String, String> environment) {
        String hostKey = prefix + ".host";
        String hostText;
        String hostSource;
        Optional<String> configured = config.get(hostKey);
        String fromEnvironment = environment.get(hostVariable);
        if (configured.isPresent()) {
            hostText = configured.get().trim();
            hostSource = hostKey;
        } else if (fromEnvironment != null && !fromEnvironment.isBlank()) {
            hostText = fromEnvironment.trim();
            hostSource = hostVariable;
        } else {
            hostText = defaultHost;
            hostSource = "default";
        }
        URI host = parseHost(hostSource.equals("default") ? hostKey : hostSource, hostText);

        String versionKey = prefix + ".api-version";
        String apiVersion = config.get(versionKey, DEFAULT_API_VERSION).trim();
        if (!API_VERSION.matcher(apiVersion).matches()) {
            throw DriverException.invalidArgument(versionKey, "must look like 1.41, got '" + apiVersion + "'");
        }
        Duration stopGrace = nonNegative(
                prefix + ".stop-grace-period",
                config.asDuration(prefix + ".stop-grace-period", Duration.ofSeconds(10)));
        Duration requestTimeout = positive(
                prefix + ".request-timeout", config.asDuration(prefix + ".request-timeout", Duration.ofSeconds(60)));
        Duration pullTimeout =
                positive(prefix + ".pull-timeout", config.asDuration(prefix + ".pull-timeout", Duration.ofMinutes(10)));
        Duration reconnect = positive(
                prefix + ".watch-reconnect-timeout",
                config.asDuration(prefix + ".watch-reconnect-timeout", Duration.ofSeconds(60)));
        Optional<String> tlsCertPath = config.get(prefix + ".tls-cert-path").map(String::trim);
        if (tlsCertPath.isPresent() && !host.getScheme().equals("tcp")) {
            throw DriverException.invalidArgument(prefix + ".tls-cert-path", "applies only to a tcp:// host");
        }
        return new ContainerDriverSettings(
                host, hostSource, tlsCertPath, apiVersion, stopGrace, requestTimeout, pullTimeout, reconnect);
    }

    /** The stop grace period in whole seconds, as the engine API takes it (rounded up). */
    public int stopGraceSeconds() {
        long seconds = stopGracePeriod.toSeconds() + (stopGracePeriod.toNanosPart() > 0 ? 1 : 0);
        return (int) Math.min(seconds, Integer.MAX_VALUE);
    }

    private static URI parseHost(String key, String text) {
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw DriverException.invalidArgument(key, "is not a URI: '" + text + "'");
        }
        String scheme = uri.getScheme();
        if ("unix".equals(scheme)) {
            if (uri.getPath() == null || uri.getPath().isEmpty()) {
                throw DriverException.invalidArgument(key, "must name a socket path, e.g. unix:///run/docker.sock");
            }
            return uri;
        }
        if ("tcp".equals(scheme)) {
            if (uri.getHost() == null || uri.getPort() < 0) {
                throw DriverException.invalidArgument(key, "must name a host and port, e.g. tcp://127.0.0.1:2375");
            }
            return uri;
        }
        throw DriverException.invalidArgument(key, "must be unix:///path or tcp://host:port, got '" + text + "'");
    }

    private static Duration nonNegative(String key, Duration value) {
        if (value.isNegative()) {
            throw DriverException.invalidArgument(key, "must not be negative");
        }
        return value;
    }

    private static Duration positive(String key, Duration value) {
        if (value.isNegative() || value.isZero()) {
            throw DriverException.invalidArgument(key, "must be positive");
        }
        return value;
    }
}
