package dev.sandgate.benchmarks.engine;

/**
 * One way of running a sandbox's lifecycle on the engine: through the gateway, or directly. Each call returns when the
 * engine work is done; each failure is thrown (the benchmark stops at the first).
 */
interface LifecycleSide extends AutoCloseable {
    /** What the table calls this side. */
    String label();

    /** Creates and launches a sandbox named {@code name}; returns what the other calls take to address it. */
    String create(String name);

    /** Stops the running sandbox and returns when the engine reports it stopped. */
    void stop(String handle);

    /** Launches the stopped sandbox again (a new execution). */
    void start(String handle);

    /** Removes the sandbox: its container and its workspace volume. */
    void delete(String handle);

    @Override
    void close();
}
