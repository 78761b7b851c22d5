package dev.sandgate.spi;

/**
 * A command started by {@link ComputeDriver#exec}. Closing it before the command ends kills the command (where the
 * backend can) and ends the output: the listener then gets its one final callback ({@link ExecListener#exited}, or
 * {@link ExecListener#failed} where the outcome is unknown) unless it already had it, and nothing after it. Closing is
 * idempotent and does not wait for that callback.
 */
public interface ExecProcess extends AutoCloseable {
    /** Writes to the command's standard input ({@link ExecCommand#stdin()} must be set). */
    void writeStdin(byte[] data);

    /** Ends the command's standard input. Idempotent. */
    void closeStdin();

    /** Resizes the command's terminal ({@link ExecCommand#tty()} must be set); ignored where the backend cannot. */
    void resize(TerminalSize size);

    @Override
    void close();
}
