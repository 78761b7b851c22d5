package dev.sandgate.gateway.server;

/** The gateway's configuration is invalid; the message names the setting and says what is wrong. */
public final class ConfigException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ConfigException(String message) {
        super(message);
    }

    public ConfigException(String message, Throwable cause) {
        super(message, cause);
    }
}
