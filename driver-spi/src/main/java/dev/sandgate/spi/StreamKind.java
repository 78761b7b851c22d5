package dev.sandgate.spi;

/** Which output stream of a process a chunk of output came from. */
public enum StreamKind {
    STDOUT,
    STDERR
}
