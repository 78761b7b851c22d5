package dev.sandgate.spi;

/** The network a sandbox gets at launch. */
public enum NetworkMode {
    /** No network interface but loopback. */
    NONE,
    /** The backend's default network for sandboxes. */
    DEFAULT
}
