package dev.sandgate.gateway.security;

import java.util.Optional;

/** One way of authenticating a call. */
interface Authenticator {
    /**
     * The principal the credentials establish; empty when they hold no credential of this kind.
     *
     * @throws AuthenticationException when a credential of this kind is present and invalid
     */
    Optional<Principal> authenticate(Credentials credentials) throws AuthenticationException;

    /** Whether this authenticator reads bearer values (several may: the first that recognises the value wins). */
    default boolean readsBearer() {
        return false;
    }
}
