package dev.sandgate.gateway.store;

/** How a sandbox's policy may change; chosen at create. */
public enum PolicyMode {
    /** New revisions may be admitted; each claimed start captures the latest admitted revision. */
    LIVE,
    /** The creation snapshot is the only revision. */
    FROZEN
}
