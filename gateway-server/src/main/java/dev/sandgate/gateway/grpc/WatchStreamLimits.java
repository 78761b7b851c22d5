package dev.sandgate.gateway.grpc;

/** The limits of a WatchSandboxes stream. */
public final class WatchStreamLimits {
    /**
     * How many of the gateway's committed changes (of any sandbox, whether the watch wants them or not) a watch may
     * fall behind before it ends with WATCH_OVERFLOW.
     */
    public static final int CAPACITY = 10_000;

    private WatchStreamLimits() {}
}
