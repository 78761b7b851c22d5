package dev.sandgate.gateway.security;

import static java.util.Objects.requireNonNull;

import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.source.JWKSource;
import com.nimbusds.jose.proc.DefaultJOSEObjectTypeVerifier;
import com.nimbusds.jose.proc.JWSVerificationKeySelector;
import com.nimbusds.jose.proc.SecurityContext;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.proc.ConfigurableJWTProcessor;
import com.nimbusds.jwt.proc.DefaultJWTClaimsVerifier;
import com.nimbusds.jwt.proc.DefaultJWTProcessor;
import java.text.ParseException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Bearer JWTs (OIDC ID or access tokens, Kubernetes service-account tokens), validated by nimbus-jose-jwt: the
 * signature against a JWKS (public keys only) with one of the allowed asymmetric algorithms (never {@code none}, never
 * an HMAC, so a public key can never serve as an HMAC secret), the issuer exactly, the audience, {@code exp} (required)
 * and {@code nbf} with a bounded clock skew. The principal is the {@code sub} claim (or another configured claim); the
 * groups are a string or string-list claim ({@code groups} by default).
 */
final class JwtAuthenticator implements Authenticator {
    /** The algorithms that may be allowed: asymmetric signatures only. */
    static final Set<JWSAlgorithm> PERMITTED = Set.of(
            JWSAlgorithm.RS256,
            JWSAlgorithm.RS384,
            JWSAlgorithm.RS512,
            JWSAlgorithm.PS256,
            JWSAlgorithm.PS384,
            JWSAlgorithm.PS512,
            JWSAlgorithm.ES256,
            JWSAlgorithm.ES384,
            JWSAlgorithm.ES512,
            JWSAlgorithm.Ed25519,
            JWSAlgorithm.EdDSA);
    /** The largest clock skew one may configure. */
    static final Duration MAX_CLOCK_SKEW = Duration.ofMinutes(5);

    private final ConfigurableJWTProcessor<SecurityContext> processor;
    private final String principalClaim;
    private final String groupsClaim;

    /**
     * @param keys the current JWKS (a file reloaded on change, or a URL's cached set)
     * @param algorithms the allowed algorithms, a non-empty subset of {@link #PERMITTED}
     */
    JwtAuthenticator(
            JWKSource<SecurityContext> keys,
            Set<JWSAlgorithm> algorithms,
            String issuer,
            String audience,
            Duration clockSkew,
            String principalClaim,
            String groupsClaim) {
        requireNonNull(keys, "keys is null");
        if (algorithms.isEmpty() || !PERMITTED.containsAll(algorithms)) {
            throw new IllegalArgumentException("allowed JWT algorithms must be asymmetric ones of " + PERMITTED);
        }
        if (clockSkew.isNegative() || clockSkew.compareTo(MAX_CLOCK_SKEW) > 0) {
            throw new IllegalArgumentException("the JWT clock skew must be 0 to " + MAX_CLOCK_SKEW.toSeconds() + "s");
        }
        this.principalClaim = requireNonNull(principalClaim, "principalClaim is null");
        this.groupsClaim = requireNonNull(groupsClaim, "groupsClaim is null");
        processor = new DefaultJWTProcessor<>();
        // "JWT" or no typ at all (Kubernetes service-account tokens carry none); "at+jwt" access tokens too.
        processor.setJWSTypeVerifier(
                new DefaultJOSEObjectTypeVerifier<>(JOSEObjectType.JWT, new JOSEObjectType("at+jwt"), null));
        processor.setJWSKeySelector(new JWSVerificationKeySelector<>(Set.copyOf(algorithms), keys));
        DefaultJWTClaimsVerifier<SecurityContext> claims = new DefaultJWTClaimsVerifier<>(
                Set.of(requireNonNull(audience, "audience is null")),
                new JWTClaimsSet.Builder()
                        .issuer(requireNonNull(issuer, "issuer is null"))
                        .build(),
                Set.of("iss", "aud", "exp", principalClaim),
                Set.of());
        claims.setMaxClockSkew((int) clockSkew.toSeconds());
        processor.setJWTClaimsSetVerifier(claims);
    }

    /** A JWK source over the public keys of a set that may change (a file reloaded on change). */
    static JWKSource<SecurityContext> publicKeys(Supplier<JWKSet> set) {
        return (selector, context) -> selector.select(set.get().toPublicJWKSet());
    }

    @Override
    public boolean readsBearer() {
        return true;
    }

    @Override
    public Optional<Principal> authenticate(Credentials credentials) throws AuthenticationException {
        if (credentials.bearer().isEmpty()) {
            return Optional.empty();
        }
        String token = credentials.bearer().get();
        if (token.chars().filter(c -> c == '.').count() != 2) {
            return Optional.empty(); // not a JWT: another authenticator's
        }
        JWTClaimsSet claims;
        try {
            claims = processor.process(token, null);
        } catch (Exception e) {
            // nimbus's messages name the failed check (expired, audience, issuer, algorithm, key), never the token.
            throw new AuthenticationException("JWT rejected: " + e.getMessage(), e);
        }
        try {
            String name = claims.getStringClaim(principalClaim);
            if (name == null || name.isBlank()) {
                throw new AuthenticationException("JWT rejected: claim " + principalClaim + " is empty");
            }
            return Optional.of(new Principal(name, groups(claims), "jwt"));
        } catch (ParseException e) {
            throw new AuthenticationException("JWT rejected: claim " + principalClaim + " is not a string", e);
        }
    }

    private Set<String> groups(JWTClaimsSet claims) throws AuthenticationException {
        Object value = claims.getClaim(groupsClaim);
        if (value == null) {
            return Set.of();
        }
        if (value instanceof String single) {
            return Set.of(single);
        }
        if (value instanceof List<?> list) {
            Set<String> groups = new HashSet<>();
            for (Object group : list) {
                if (!(group instanceof String text)) {
                    throw new AuthenticationException("JWT rejected: claim " + groupsClaim + " holds a non-string");
                }
                groups.add(text);
            }
            return groups;
        }
        throw new AuthenticationException("JWT rejected: claim " + groupsClaim + " is neither a string nor a list");
    }
}
