package dev.sandgate.gateway.grpc;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.lifecycle.Lifecycle;
import dev.sandgate.gateway.lifecycle.SandboxChange;
import dev.sandgate.gateway.store.SandboxFilter;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.StoreTransaction.SandboxKey;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One WatchSandboxes stream: reads the {@link WatchFanout}'s log from the moment it opens, sends a snapshot of every
 * matching sandbox and a SYNCED marker, then the changes it wants from the log, skipping those the snapshot already
 * covered (by resource version).
 *
 * <p>A stream owns no thread and no task: its lane's turn ({@link WatchFanout.Lane}) runs {@link #turn()}, which sends
 * while the transport is ready, at most {@link #TURN} messages. A client that falls more than {@link
 * WatchStreamLimits#CAPACITY} changes behind the log gets RESOURCE_EXHAUSTED (reason WATCH_OVERFLOW) and watches again;
 * the others never wait for it. When the gateway shuts down, the stream ends with UNAVAILABLE (reason
 * GATEWAY_SHUTTING_DOWN).
 */
final class WatchStream {
    /** The most messages a stream sends in one turn of its lane. */
    static final int TURN = 256;

    private static final int SNAPSHOT_PAGE = 500;
    /**
     * How many changes a stream sends between two looks at its transport's readiness (each look takes a lock in gRPC):
     * a stream whose client stopped reading buffers at most that many more messages.
     */
    private static final int READY_EVERY = 8;

    private static final Logger log = LoggerFactory.getLogger(WatchStream.class);

    private final Lifecycle lifecycle;
    private final ApiMapper mapper;
    private final SandboxFilter filter;
    private final SandboxFilter removalFilter;
    private final Predicate<String> visible;
    private final ServerCallStreamObserver<Object> out;
    private final WatchFanout fanout;
    private final AtomicBoolean counted = new AtomicBoolean();
    private final WatchFanout.Lane lane;
    private volatile boolean cancelled;
    private volatile boolean overflowed;
    private volatile boolean shuttingDown;

    // Owned by the lane's turn (turns of a lane never overlap).
    private long cursor;
    private final SentVersions sentVersions;
    private Optional<SandboxKey> snapshotAfter = Optional.empty();
    private List<SandboxRecord> snapshotPage = List.of();
    private int snapshotIndex;
    private boolean snapshotMore = true;
    private boolean synced;
    private boolean ended;

    private WatchStream(
            Lifecycle lifecycle,
            ApiMapper mapper,
            SandboxFilter filter,
            Predicate<String> visible,
            ServerCallStreamObserver<Object> out,
            WatchFanout fanout) {
        this.lifecycle = lifecycle;
        this.visible = visible;
        this.mapper = mapper;
        this.filter = filter;
        this.removalFilter = new SandboxFilter(filter.workspace(), filter.labels(), Set.of());
        this.sentVersions = new SentVersions(filter.phases().isEmpty(), System::nanoTime);
        this.out = out;
        this.fanout = fanout;
        this.lane = fanout.nextLane();
    }

    /**
     * Opens a stream: it receives changes from now on and sends its snapshot on the fan-out's executor.
     *
     * @throws RejectedExecutionException when the executor is shut down (nothing is left registered)
     */
    static void start(
            Lifecycle lifecycle,
            ApiMapper mapper,
            SandboxFilter filter,
            ServerCallStreamObserver<Object> out,
            WatchFanout fanout) {
        start(lifecycle, mapper, filter, workspace -> true, out, fanout);
    }

    /** As above, sending only sandboxes of the workspaces {@code visible} accepts ({@link VisibleWorkspaces}). */
    static void start(
            Lifecycle lifecycle,
            ApiMapper mapper,
            SandboxFilter filter,
            Predicate<String> visible,
            ServerCallStreamObserver<Object> out,
            WatchFanout fanout) {
        WatchStream stream = new WatchStream(lifecycle, mapper, filter, visible, out, fanout);
        // Changes committed before this are in the snapshot, which the first turn reads.
        stream.cursor = fanout.head();
        lifecycle.observer().watchStreamOpened();
        try {
            fanout.add(stream, stream.lane);
        } catch (RejectedExecutionException e) {
            stream.closed();
            throw e;
        }
        out.setOnCancelHandler(stream::cancel);
        out.setOnReadyHandler(stream::wake);
    }

    /** Ends the stream with WATCH_OVERFLOW: it fell too far behind. */
    void overflow() {
        overflowed = true;
        wake();
    }

    /** Ends the stream with UNAVAILABLE (reason GATEWAY_SHUTTING_DOWN) at its next turn. Returns at once. */
    void shutDown() {
        shuttingDown = true;
        wake();
    }

    /** The executor took no more turns: the gateway is stopping and cancels the stream's call with the server. */
    void abandoned() {
        closed();
    }

    private void cancel() {
        cancelled = true;
        wake();
    }

    private void wake() {
        lane.wake();
    }

    /**
     * One turn, on the lane's thread: ends the stream if it must, else sends what it can. Returns whether it stopped
     * with more to send while the transport was ready (and wants another turn soon).
     */
    boolean turn() {
        if (ended) {
            return false;
        }
        try {
            return step();
        } catch (RuntimeException e) {
            if (!ended) {
                if (!(e instanceof GatewayException)) {
                    log.warn("a watch stream failed; it ends", e);
                }
                end(e);
            }
            return false;
        }
    }

    private boolean step() {
        if (cancelled) {
            ended = true;
            closed();
            fanout.remove(this);
            return false;
        }
        if (shuttingDown) {
            end(new GatewayException(ErrorReason.GATEWAY_SHUTTING_DOWN, "the gateway is shutting down; watch again"));
            return false;
        }
        if (overflowed) {
            lifecycle.observer().watchEventDropped();
            end(new GatewayException(
                    ErrorReason.WATCH_OVERFLOW, "the watch may have missed changes (it fell behind); watch again"));
            return false;
        }
        if (fanout.head() - cursor > fanout.capacity()) {
            overflow(fanout.capacity());
            return false;
        }
        int budget = TURN;
        while (!synced && budget > 0 && out.isReady()) {
            budget--;
            if (snapshotIndex < snapshotPage.size()) {
                SandboxRecord sandbox = snapshotPage.get(snapshotIndex++);
                if (!visible.test(sandbox.workspace())) {
                    continue;
                }
                sentVersions.snapshot(sandbox);
                out.onNext(mapper.snapshotEvent(sandbox));
                if (log.isTraceEnabled()) {
                    log.trace(
                            "watch stream: snapshot sandbox={} version={} (cursor {})",
                            sandbox.id(),
                            sandbox.resourceVersion(),
                            cursor);
                }
            } else if (snapshotMore) {
                Lifecycle.Page page = lifecycle.list(filter, snapshotAfter, SNAPSHOT_PAGE);
                snapshotPage = page.sandboxes();
                snapshotIndex = 0;
                snapshotMore = page.more();
                if (!snapshotPage.isEmpty()) {
                    SandboxRecord last = snapshotPage.getLast();
                    snapshotAfter = Optional.of(new SandboxKey(last.workspace(), last.name()));
                }
            } else {
                snapshotPage = List.of();
                synced = true;
                out.onNext(ApiMapper.syncedEvent());
            }
        }
        if (!synced) {
            return budget == 0 && out.isReady();
        }
        long head = fanout.head();
        int sinceReady = READY_EVERY;
        while (cursor < head) {
            WatchFanout.Delivery delivery = fanout.at(cursor);
            if (delivery == null) {
                overflow(fanout.capacity());
                return false;
            }
            SandboxChange change = delivery.change();
            if (wants(change)) {
                if (budget == 0) {
                    return out.isReady();
                }
                if (sinceReady == READY_EVERY) {
                    if (!out.isReady()) {
                        // The transport's onReady wakes the lane, which picks up from here.
                        return false;
                    }
                    sinceReady = 0;
                }
                sinceReady++;
                budget--;
                if (sentVersions.admit(change)) {
                    out.onNext(delivery.encoded());
                    lifecycle.observer().watchEventDelivered();
                    if (log.isTraceEnabled()) {
                        log.trace(
                                "watch stream: sent {} sandbox={} version={} at {}",
                                change.type(),
                                change.sandbox().id(),
                                change.sandbox().resourceVersion(),
                                cursor);
                    }
                } else if (log.isTraceEnabled()) {
                    log.trace(
                            "watch stream: held back {} sandbox={} version={} at {}",
                            change.type(),
                            change.sandbox().id(),
                            change.sandbox().resourceVersion(),
                            cursor);
                }
            }
            cursor++;
        }
        return false;
    }

    /** Whether this stream sends {@code change}. */
    private boolean wants(SandboxChange change) {
        if (!visible.test(change.sandbox().workspace())) {
            return false;
        }
        return change.type() == SandboxChange.Type.REMOVED
                ? removalFilter.matches(change.sandbox())
                : filter.matches(change.sandbox());
    }

    private void overflow(int capacity) {
        lifecycle.observer().watchEventDropped();
        end(new GatewayException(
                ErrorReason.WATCH_OVERFLOW, "the watch fell more than " + capacity + " changes behind; watch again"));
    }

    /** Counts the stream as closed in the metrics, once whichever way it ends. */
    private void closed() {
        if (counted.compareAndSet(false, true)) {
            lifecycle.observer().watchStreamClosed();
        }
    }

    private void end(RuntimeException e) {
        ended = true;
        closed();
        fanout.remove(this);
        if (cancelled) {
            return;
        }
        try {
            out.onError(ErrorMapper.toStatusException(e));
        } catch (RuntimeException closed) {
            log.debug("watch stream already closed", closed);
        }
    }
}
