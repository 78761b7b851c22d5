package dev.sandgate.driver.remote;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * The remote driver's settings.
 *
 * @param target {@code unix:///absolute/path} (the socket must be owner-only) or {@code host:port} (TCP, mutual TLS
 *     required)
 * @param tls the client certificate, key and the CA that signed the server's certificate; required for TCP
 * @param expectedDriver the remote driver's name, if the gateway insists on one
 * @param callTimeout the deadline of each call (a caller's own gRPC deadline, if shorter, wins)
 * @param connectTimeout the deadline of the handshake (availability and create)
 */
public record RemoteSettings(
        Endpoint target,
        Optional<Tls> tls,
        Optional<String> expectedDriver,
        Duration callTimeout,
        Duration connectTimeout) {
    public static final String PREFIX = "remote.";
    public static final String TARGET = "remote.target";
    public static final String TLS_CERTIFICATE = "remote.tls.certificate";
    public static final String TLS_KEY = "remote.tls.key";
    public static final String TLS_TRUST = "remote.tls.trust";
    public static final String DRIVER = "remote.driver";
    public static final String CALL_TIMEOUT = "remote.call-timeout";
    public static final String CONNECT_TIMEOUT = "remote.connect-timeout";

    /** PEM files for mutual TLS. */
    public record Tls(Path certificate, Path key, Path trust) {}

    /** Where the driver listens. */
    public sealed interface Endpoint {
        /** A Unix domain socket. */
        record Unix(Path path) implements Endpoint {
            @Override
            public String toString() {
                return "unix://" + path;
            }
        }

        /** A TCP address. */
        record Tcp(String host, int port) implements Endpoint {
            @Override
            public String toString() {
                return host + ":" + port;
            }
        }

        /** {@code unix:///absolute/path} or {@code host:port}; errors name {@code key}. */
        static Endpoint parse(String key, String text) {
            if (text.startsWith("unix:")) {
                String path = text.substring("unix:".length()).replaceFirst("^//", "");
                if (!path.startsWith("/")) {
                    throw DriverException.invalidArgument(key, "must be unix:///absolute/path or host:port");
                }
                return new Unix(Path.of(path));
            }
            int colon = text.lastIndexOf(':');
            if (colon <= 0 || colon == text.length() - 1) {
                throw DriverException.invalidArgument(key, "must be unix:///absolute/path or host:port");
            }
            int port;
            try {
                port = Integer.parseInt(text.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw DriverException.invalidArgument(key, "the port must be a number");
            }
            if (port < 1 || port > 65535) {
                throw DriverException.invalidArgument(key, "the port must be between 1 and 65535");
            }
            String host = text.substring(0, colon);
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            return new Tcp(host, port);
        }
    }

    public static RemoteSettings from(DriverSettings config) {
        config.rejectUnknown(
                PREFIX,
                Set.of(TARGET, TLS_CERTIFICATE, TLS_KEY, TLS_TRUST, DRIVER, CALL_TIMEOUT, CONNECT_TIMEOUT),
                Set.of());
        Endpoint target = Endpoint.parse(TARGET, config.require(TARGET));
        Optional<String> certificate = config.get(TLS_CERTIFICATE);
        Optional<String> key = config.get(TLS_KEY);
        Optional<String> trust = config.get(TLS_TRUST);
        Optional<Tls> tls = Optional.empty();
        if (certificate.isPresent() || key.isPresent() || trust.isPresent()) {
            tls = Optional.of(new Tls(
                    Path.of(config.require(TLS_CERTIFICATE)),
                    Path.of(config.require(TLS_KEY)),
                    Path.of(config.require(TLS_TRUST))));
        }
        if (target instanceof Endpoint.Tcp && tls.isEmpty()) {
            throw DriverException.invalidArgument(
                    TLS_CERTIFICATE,
                    "a TCP target needs mutual TLS: set " + TLS_CERTIFICATE + ", " + TLS_KEY + " and " + TLS_TRUST);
        }
        if (target instanceof Endpoint.Unix && tls.isPresent()) {
            throw DriverException.invalidArgument(
                    TLS_CERTIFICATE, "TLS is for TCP targets; a Unix socket is owner-only");
        }
        Duration callTimeout = config.asDuration(CALL_TIMEOUT, Duration.ofMinutes(10));
        Duration connectTimeout = config.asDuration(CONNECT_TIMEOUT, Duration.ofSeconds(10));
        if (callTimeout.isZero()) {
            throw DriverException.invalidArgument(CALL_TIMEOUT, "must be positive");
        }
        if (connectTimeout.isZero()) {
            throw DriverException.invalidArgument(CONNECT_TIMEOUT, "must be positive");
        }
        return new RemoteSettings(target, tls, config.get(DRIVER), callTimeout, connectTimeout);
    }
}
