package dev.sandgate.gateway.store;

/** A compare-and-set found another resource version than expected: someone else changed the record first. */
public final class StaleRecordException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public StaleRecordException(String message) {
        super(message);
    }
}
