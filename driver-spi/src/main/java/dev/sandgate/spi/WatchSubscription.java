package dev.sandgate.spi;

/** An open {@link ComputeDriver#watch} subscription. Closing it is idempotent and stops all callbacks. */
public interface WatchSubscription extends AutoCloseable {
    @Override
    void close();
}
