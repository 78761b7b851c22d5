package dev.sandgate.gateway.security;

import static java.util.Objects.requireNonNull;

import com.nimbusds.jose.JWSAlgorithm;
import dev.sandgate.gateway.server.ConfigException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The gateway's security settings (read by {@code GatewaySettings}, with the same precedence as its other settings;
 * declared as options in {@code GatewayOptions}).
 * Checked together: a gateway that listens beyond loopback needs TLS and an authenticator, or {@code --insecure}.
 *
 * @param tlsCert the server certificate chain (PEM), reloaded on change
 * @param tlsKey its private key (PEM, PKCS#8), reloaded on change
 * @param tlsClientCa the CA (PEM) client certificates must chain to: mTLS, reloaded on change
 * @param clientAuth whether a client certificate is required ({@code require}) or may be replaced by a bearer token
 *     ({@code optional})
 * @param jwtJwks the JWKS that signs accepted JWTs: a file (reloaded on change) or an https URL (cached)
 * @param jwtIssuer the {@code iss} accepted JWTs carry
 * @param jwtAudience an {@code aud} accepted JWTs carry
 * @param jwtClockSkew the clock skew allowed on {@code exp} and {@code nbf} (at most 5 minutes)
 * @param jwtAlgorithms the signature algorithms accepted (asymmetric only)
 * @param jwtPrincipalClaim the claim naming the principal
 * @param jwtGroupsClaim the claim listing its groups
 * @param apiTokenFile the static API tokens' digests ({@link StaticTokenAuthenticator}), reloaded on change
 * @param authzPolicy the access policy ({@link AccessPolicy}), reloaded on change
 * @param insecure whether the gateway may listen beyond loopback without TLS or without an authenticator
 * @param reloadPeriod how often the files above are checked for changes
 */
public record SecuritySettings(
        Optional<Path> tlsCert,
        Optional<Path> tlsKey,
        Optional<Path> tlsClientCa,
        ClientAuth clientAuth,
        Optional<String> jwtJwks,
        Optional<String> jwtIssuer,
        Optional<String> jwtAudience,
        Duration jwtClockSkew,
        Set<JWSAlgorithm> jwtAlgorithms,
        String jwtPrincipalClaim,
        String jwtGroupsClaim,
        Optional<Path> apiTokenFile,
        Optional<Path> authzPolicy,
        boolean insecure,
        Duration reloadPeriod) {
    public enum ClientAuth {
        REQUIRE,
        OPTIONAL
    }

    public SecuritySettings {
        requireNonNull(tlsCert, "tlsCert is null");
        requireNonNull(tlsKey, "tlsKey is null");
        requireNonNull(tlsClientCa, "tlsClientCa is null");
        requireNonNull(clientAuth, "clientAuth is null");
        requireNonNull(jwtJwks, "jwtJwks is null");
        requireNonNull(jwtIssuer, "jwtIssuer is null");
        requireNonNull(jwtAudience, "jwtAudience is null");
        requireNonNull(jwtClockSkew, "jwtClockSkew is null");
        jwtAlgorithms = Set.copyOf(jwtAlgorithms);
        requireNonNull(jwtPrincipalClaim, "jwtPrincipalClaim is null");
        requireNonNull(jwtGroupsClaim, "jwtGroupsClaim is null");
        requireNonNull(apiTokenFile, "apiTokenFile is null");
        requireNonNull(authzPolicy, "authzPolicy is null");
        requireNonNull(reloadPeriod, "reloadPeriod is null");
    }

    public boolean tls() {
        return tlsCert.isPresent();
    }

    /** Whether any authenticator is configured (then every SandboxService call must authenticate). */
    public boolean authenticates() {
        return tlsClientCa.isPresent() || jwtJwks.isPresent() || apiTokenFile.isPresent();
    }

    /**
     * Reads the settings from {@code settings} (the merged flags, environment and file) and checks them against the
     * listen host. Throws {@link ConfigException} naming the setting.
     */
    @SuppressWarnings("StringSplitter") // jwt-algorithms tolerates a trailing comma, as String.split does
    public static SecuritySettings from(Map<String, String> settings, String listenHost) {
        Function<String, Optional<String>> get =
                key -> Optional.ofNullable(settings.get(key)).map(String::strip).filter(v -> !v.isEmpty());
        Optional<Path> cert = get.apply("tls-cert").map(Path::of);
        Optional<Path> key = get.apply("tls-key").map(Path::of);
        if (cert.isPresent() != key.isPresent()) {
            throw new ConfigException("tls-cert and tls-key go together");
        }
        Optional<Path> clientCa = get.apply("tls-client-ca").map(Path::of);
        if (clientCa.isPresent() && cert.isEmpty()) {
            throw new ConfigException("tls-client-ca (mTLS) needs tls-cert and tls-key");
        }
        ClientAuth clientAuth = get.apply("tls-client-auth")
                .map(v -> switch (v.toLowerCase(Locale.ROOT)) {
                    case "require" -> ClientAuth.REQUIRE;
                    case "optional" -> ClientAuth.OPTIONAL;
                    default ->
                        throw new ConfigException("tls-client-auth must be require or optional, got '" + v + "'");
                })
                .orElse(ClientAuth.REQUIRE);
        Optional<String> jwks = get.apply("jwt-jwks");
        Optional<String> issuer = get.apply("jwt-issuer");
        Optional<String> audience = get.apply("jwt-audience");
        if (jwks.isPresent() && (issuer.isEmpty() || audience.isEmpty())) {
            throw new ConfigException("jwt-jwks needs jwt-issuer and jwt-audience");
        }
        if (jwks.isPresent() && jwks.get().startsWith("http:") && !loopback(hostOf(jwks.get()))) {
            throw new ConfigException("jwt-jwks must be a file or an https URL, got " + jwks.get());
        }
        Duration skew = duration(get.apply("jwt-clock-skew").orElse("60s"), "jwt-clock-skew");
        if (skew.compareTo(JwtAuthenticator.MAX_CLOCK_SKEW) > 0) {
            throw new ConfigException("jwt-clock-skew must be at most 5m");
        }
        Set<JWSAlgorithm> algorithms = new LinkedHashSet<>();
        for (String name : get.apply("jwt-algorithms").orElse("RS256,ES256").split(",")) {
            JWSAlgorithm algorithm = JWSAlgorithm.parse(name.strip());
            if (!JwtAuthenticator.PERMITTED.contains(algorithm)) {
                throw new ConfigException("jwt-algorithms: " + name.strip() + " is not allowed; use asymmetric ones: "
                        + JwtAuthenticator.PERMITTED.stream()
                                .map(JWSAlgorithm::getName)
                                .sorted()
                                .collect(Collectors.joining(",")));
            }
            algorithms.add(algorithm);
        }
        Optional<Path> tokens = get.apply("api-token-file").map(Path::of);
        Optional<Path> policy = get.apply("authz-policy").map(Path::of);
        boolean insecure = get.apply("insecure")
                .map(v -> Arrays.asList("true", "yes", "1").contains(v.toLowerCase(Locale.ROOT)))
                .orElse(false);
        SecuritySettings security = new SecuritySettings(
                cert,
                key,
                clientCa,
                clientAuth,
                jwks,
                issuer,
                audience,
                skew,
                algorithms,
                get.apply("jwt-principal-claim").orElse("sub"),
                get.apply("jwt-groups-claim").orElse("groups"),
                tokens,
                policy,
                insecure,
                duration(get.apply("security-reload-period").orElse("10s"), "security-reload-period"));
        if (security.authenticates() && policy.isEmpty()) {
            throw new ConfigException("an authenticator (tls-client-ca, jwt-jwks, api-token-file) needs authz-policy:"
                    + " the file of who may do what in which workspace");
        }
        if (policy.isPresent() && !security.authenticates()) {
            throw new ConfigException("authz-policy needs an authenticator: tls-client-ca, jwt-jwks or api-token-file");
        }
        if (!loopback(listenHost) && !(security.tls() && security.authenticates()) && !insecure) {
            throw new ConfigException("refusing to listen on " + listenHost + " without TLS and an authenticator:"
                    + " set tls-cert/tls-key and one of tls-client-ca, jwt-jwks, api-token-file (with authz-policy),"
                    + " listen on 127.0.0.1, or start with --insecure to accept unauthenticated plaintext calls");
        }
        return security;
    }

    /** Whether the gateway is started {@code --insecure} where that matters: beyond loopback, without TLS or auth. */
    public boolean exposedInsecurely(String listenHost) {
        return insecure && !loopback(listenHost) && !(tls() && authenticates());
    }

    static boolean loopback(String host) {
        String h = host.toLowerCase(Locale.ROOT);
        return h.equals("localhost") || h.startsWith("127.") || h.equals("::1") || h.equals("0:0:0:0:0:0:0:1");
    }

    private static String hostOf(String url) {
        try {
            return java.net.URI.create(url).getHost();
        } catch (IllegalArgumentException e) {
            throw new ConfigException("jwt-jwks is not a URL or a file: " + url);
        }
    }

    private static Duration duration(String text, String key) {
        try {
            return new dev.sandgate.spi.DriverSettings(Map.of(key, text)).asDuration(key, Duration.ZERO);
        } catch (dev.sandgate.spi.DriverException e) {
            throw new ConfigException(e.getMessage());
        }
    }
}
