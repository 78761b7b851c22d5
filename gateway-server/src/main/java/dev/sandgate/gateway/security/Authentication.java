package dev.sandgate.gateway.security;

import java.util.List;
import java.util.Optional;

/**
 * The configured authenticators, in order. A call with a bearer value is authenticated by the first bearer
 * authenticator that recognises it (a bearer nobody recognises is refused, even with a valid client certificate);
 * a call without one by its client certificate; a call with neither is refused.
 */
final class Authentication {
    private final List<Authenticator> authenticators;

    Authentication(List<Authenticator> authenticators) {
        if (authenticators.isEmpty()) {
            throw new IllegalArgumentException("no authenticator");
        }
        this.authenticators = List.copyOf(authenticators);
    }

    Principal authenticate(Credentials credentials) throws AuthenticationException {
        boolean bearer = credentials.bearer().isPresent();
        for (Authenticator authenticator : authenticators) {
            if (authenticator.readsBearer() != bearer) {
                continue;
            }
            Optional<Principal> principal = authenticator.authenticate(credentials);
            if (principal.isPresent()) {
                return principal.get();
            }
        }
        throw new AuthenticationException(
                bearer
                        ? "the bearer token is not recognised"
                        : "no credentials: a client certificate or a bearer" + " token is required");
    }
}
