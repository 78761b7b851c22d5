package dev.sandgate.gateway.metrics;

/**
 * What the gateway tells its metrics, at a few points: the lifecycle, the driver and store decorators, the gRPC
 * interceptor and the watch streams. Every method has a no-op default and must return at once: callers hold a
 * sandbox's lock or a gRPC thread. {@link #NONE} is the gateway without metrics.
 */
public interface GatewayObserver {
    /** Observes nothing: the gateway without a metrics port. */
    GatewayObserver NONE = new GatewayObserver() {};

    /**
     * A lifecycle transition ended.
     *
     * @param operation create, stop, start or delete
     * @param outcome the outcome's name (CREATED, STOPPED_NOW, ...), PENDING or FAILED
     * @param nanos from its driver call's start (0 for a no-op)
     */
    default void transition(String operation, String outcome, long nanos) {}

    /** Recovery at start-up resumed a transition left pending. */
    default void recovery() {}

    /** A pending transition was scheduled for another attempt. */
    default void retry() {}

    /** A driver call ended; {@code outcome} is ok or the driver's error code. */
    default void driverCall(String operation, String outcome, long nanos) {}

    /** A store write transaction ended; {@code committed} is false when it threw (nothing was written). */
    default void storeCommit(boolean committed, long nanos) {}

    /** A gRPC call ended with {@code code} (OK, NOT_FOUND, ...). */
    default void grpcCall(String method, String code, long nanos) {}

    default void watchStreamOpened() {}

    default void watchStreamClosed() {}

    /** A change was sent on a watch stream. */
    default void watchEventDelivered() {}

    /** A change did not fit a watch stream's buffer: that stream ends with WATCH_OVERFLOW. */
    default void watchEventDropped() {}

    /**
     * The replica's change-log follower (PostgreSQL) passed over {@code count} sequence numbers that no committed
     * change will fill: taken by transactions that all ended without a row ({@code atTimeCap} false), or still open
     * after the hole had been held for its time cap ({@code atTimeCap} true: a change may have been missed).
     */
    default void watchLogHolesSkipped(long count, boolean atTimeCap) {}

    /**
     * The replica's change-log follower may have missed changes (it fell behind the log's pruning, or could not tell
     * after a lost connection): every watch stream of the replica ends with WATCH_OVERFLOW.
     */
    default void watchLogMissed() {}

    /** The readiness check saw the driver's engine available, or not. */
    default void engineAvailable(boolean available) {}

    /** The SandboxService accepts calls (true once it listens, false from the start of its shutdown). */
    default void serving(boolean serving) {}
}
