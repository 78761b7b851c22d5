package dev.sandgate.gateway.security;

import static java.util.Objects.requireNonNull;

import io.grpc.Context;
import java.util.Set;

/**
 * Who made a call, as an authenticator established it.
 *
 * @param name the principal's name: a client certificate's SAN or subject, a JWT's subject claim, a static token's
 *     name; {@link #ANONYMOUS} when the gateway runs without authentication
 * @param groups the groups it belongs to (a JWT's groups claim, a static token's groups)
 * @param method how it was authenticated: {@code mtls}, {@code jwt}, {@code token}, or {@code none}
 */
public record Principal(String name, Set<String> groups, String method) {
    /** The principal of every call when no authenticator is configured. */
    public static final Principal ANONYMOUS = new Principal("", Set.of(), "none");

    /** The principal of the current call, set by {@link SecurityInterceptor}. */
    static final Context.Key<Principal> KEY = Context.key("sandgate-principal");

    public Principal {
        requireNonNull(name, "name is null");
        groups = Set.copyOf(requireNonNull(groups, "groups is null"));
        requireNonNull(method, "method is null");
    }

    /** The principal of the call this thread works for; {@link #ANONYMOUS} outside an authenticated call. */
    public static Principal current() {
        Principal principal = KEY.get();
        return principal == null ? ANONYMOUS : principal;
    }

    /** The name recorded with a request id: the method and the name, so that a token and a certificate never meet. */
    public String ledgerName() {
        return name.isEmpty() ? "" : method + ":" + name;
    }
}
