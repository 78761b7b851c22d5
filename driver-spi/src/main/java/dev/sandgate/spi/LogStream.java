package dev.sandgate.spi;

/** An open {@link ComputeDriver#logs} read. Closing it is idempotent and stops all callbacks. */
public interface LogStream extends AutoCloseable {
    @Override
    void close();
}
