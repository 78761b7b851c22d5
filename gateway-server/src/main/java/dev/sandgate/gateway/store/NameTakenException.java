package dev.sandgate.gateway.store;

/** An insert found another sandbox with the same workspace and name. */
public final class NameTakenException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public NameTakenException(String message) {
        super(message);
    }
}
