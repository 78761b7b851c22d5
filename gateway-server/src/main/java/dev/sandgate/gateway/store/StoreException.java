package dev.sandgate.gateway.store;

/** The store failed (I/O, a corrupt file, a bug in a statement), or is in use by another gateway. */
public final class StoreException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public StoreException(String message) {
        super(message);
    }

    public StoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
