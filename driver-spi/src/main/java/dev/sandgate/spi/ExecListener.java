package dev.sandgate.spi;

/**
 * Receives the output and the end of one {@link ComputeDriver#exec}. A driver calls it from one thread at a time, in
 * order; exactly one of {@link #exited} and {@link #failed} is called, last, once.
 */
public interface ExecListener {
    /** The next chunk of output. May block to slow the command's output down (back-pressure). */
    void output(StreamKind stream, byte[] data);

    /** The command ended with this exit code. */
    void exited(int exitCode);

    /** The command's outcome is unknown or it could not be followed (the backend failed, the execution ended). */
    void failed(DriverException error);
}
