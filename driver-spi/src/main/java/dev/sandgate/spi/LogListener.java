package dev.sandgate.spi;

/**
 * Receives the output of one {@link ComputeDriver#logs} read. A driver calls it from one thread at a time, in order;
 * exactly one of {@link #completed} and {@link #failed} is called, last, once.
 */
public interface LogListener {
    /** The next chunk of output. May block (back-pressure). */
    void output(StreamKind stream, byte[] data);

    /** Everything asked for was delivered (without follow), or the execution ended (with follow). */
    void completed();

    /** The read could not go on. */
    void failed(DriverException error);
}
