package dev.sandgate.spi;

/**
 * Receives a watch subscription's events. A driver calls one watcher from one thread at a time, in order; it never
 * calls {@link #onEvent} after {@link #onError} or after the subscription is closed.
 */
public interface SandboxWatcher {
    /** The next event. Must return quickly: the driver's event thread waits for it. */
    void onEvent(SandboxEvent event);

    /** The subscription ended because the backend failed; the caller may watch again. */
    void onError(DriverException error);
}
