package dev.sandgate.gateway.security;

/** A credential was presented and is not valid. The message names what is wrong, never the credential itself. */
public final class AuthenticationException extends Exception {
    public AuthenticationException(String message) {
        super(message);
    }

    public AuthenticationException(String message, Throwable cause) {
        super(message, cause);
    }
}
