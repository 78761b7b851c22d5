package dev.sandgate.gateway.grpc;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.lifecycle.Lifecycle;
import dev.sandgate.gateway.lifecycle.SandboxChange;
import dev.sandgate.gateway.store.SandboxFilter;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.StoreTransaction.SandboxKey;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One WatchSandboxes stream: registers with the {@link WatchFanout} first (queueing changes), sends a snapshot of
 * every matching sandbox and a SYNCED marker, then the queued and later changes, skipping those the snapshot already
 * covered (by resource version).
 *
 * <p>A stream owns no thread. Its work runs in short turns on the shared watch executor, one turn at a time: a turn is
 * scheduled when a change arrives, when the client's flow control lets more through, or when the stream must end, and
 * it sends while the transport is ready, at most {@link #TURN} messages. A client that falls more than {@link
 * WatchStreamLimits#CAPACITY} changes behind gets RESOURCE_EXHAUSTED (reason WATCH_OVERFLOW) and watches again; the others never wait
 * for it. When the gateway shuts down, the stream ends with UNAVAILABLE (reason GATEWAY_SHUTTING_DOWN).
 */
final class WatchStream {
    private static final int SNAPSHOT_PAGE = 500;
    private static final int TURN = 256;
    private static final Logger log = LoggerFactory.getLogger(WatchStream.class);

    private final Lifecycle lifecycle;
    private final ApiMapper mapper;
    private final SandboxFilter filter;
    private final SandboxFilter removalFilter;
    private final Predicate<String> visible;
    private final ServerCallStreamObserver<Object> out;
    private final Executor executor;
    private final WatchFanout fanout;
    private final ConcurrentLinkedQueue<WatchFanout.Delivery> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queued = new AtomicInteger();
    private final AtomicBoolean scheduled = new AtomicBoolean();
    private final AtomicBoolean counted = new AtomicBoolean();
    private volatile boolean cancelled;
    private volatile boolean overflowed;
    private volatile boolean shuttingDown;
    private volatile GatewayException failure;

    // Owned by the turn that runs (turns never overlap).
    private final Map<String, Long> sentVersions = new HashMap<>();
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
            Executor executor,
            WatchFanout fanout) {
        this.lifecycle = lifecycle;
        this.visible = visible;
        this.mapper = mapper;
        this.filter = filter;
        this.removalFilter = new SandboxFilter(filter.workspace(), filter.labels(), Set.of());
        this.out = out;
        this.executor = executor;
        this.fanout = fanout;
    }

    /**
     * Opens a stream: it receives changes from now on and sends its snapshot on {@code executor}.
     *
     * @throws RejectedExecutionException when the executor is shut down (nothing is left registered)
     */
    static void start(
            Lifecycle lifecycle,
            ApiMapper mapper,
            SandboxFilter filter,
            ServerCallStreamObserver<Object> out,
            Executor executor,
            WatchFanout fanout) {
        start(lifecycle, mapper, filter, workspace -> true, out, executor, fanout);
    }

    /** As above, sending only sandboxes of the workspaces {@code visible} accepts ({@link VisibleWorkspaces}). */
    static void start(
            Lifecycle lifecycle,
            ApiMapper mapper,
            SandboxFilter filter,
            Predicate<String> visible,
            ServerCallStreamObserver<Object> out,
            Executor executor,
            WatchFanout fanout) {
        WatchStream stream = new WatchStream(lifecycle, mapper, filter, visible, out, executor, fanout);
        out.setOnCancelHandler(stream::cancel);
        out.setOnReadyHandler(stream::schedule);
        fanout.add(stream);
        lifecycle.observer().watchStreamOpened();
        stream.scheduled.set(true);
        try {
            executor.execute(stream::turn);
        } catch (RejectedExecutionException e) {
            fanout.remove(stream);
            stream.closed();
            throw e;
        }
    }

    /** Whether this stream sends {@code change} (called by the fan-out before anything is encoded). */
    boolean wants(SandboxChange change) {
        if (cancelled || overflowed || !visible.test(change.sandbox().workspace())) {
            return false;
        }
        return change.type() == SandboxChange.Type.REMOVED
                ? removalFilter.matches(change.sandbox())
                : filter.matches(change.sandbox());
    }

    /** Queues a change this stream wants; never blocks. */
    void offer(WatchFanout.Delivery delivery) {
        if (queued.incrementAndGet() > fanout.capacity()) {
            lifecycle.observer().watchEventDropped();
            overflow();
            return;
        }
        queue.add(delivery);
        schedule();
    }

    /** Ends the stream with WATCH_OVERFLOW: it fell too far behind. */
    void overflow() {
        overflowed = true;
        schedule();
    }

    /** Ends the stream with UNAVAILABLE (reason GATEWAY_SHUTTING_DOWN) at its next turn. Returns at once. */
    void shutDown() {
        shuttingDown = true;
        schedule();
    }

    /** Ends the stream with {@code e} at its next turn. */
    void fail(GatewayException e) {
        failure = e;
        schedule();
    }

    private void cancel() {
        cancelled = true;
        fanout.remove(this);
        schedule();
    }

    private void schedule() {
        if (!scheduled.compareAndSet(false, true)) {
            return;
        }
        try {
            executor.execute(this::turn);
        } catch (RejectedExecutionException e) {
            // The gateway is stopping: the stream's call is being cancelled with the server.
            scheduled.set(false);
            fanout.remove(this);
            closed();
        }
    }

    private void turn() {
        try {
            step();
        } catch (RuntimeException e) {
            if (!ended) {
                end(e);
            }
        } finally {
            scheduled.set(false);
        }
        if (!ended && hasWork()) {
            schedule();
        }
    }

    private boolean hasWork() {
        if (cancelled || overflowed || shuttingDown || failure != null) {
            return true;
        }
        return out.isReady() && (!synced || !queue.isEmpty());
    }

    private void step() {
        if (ended) {
            return;
        }
        if (cancelled) {
            ended = true;
            closed();
            return;
        }
        if (shuttingDown) {
            end(new GatewayException(ErrorReason.GATEWAY_SHUTTING_DOWN, "the gateway is shutting down; watch again"));
            return;
        }
        if (overflowed) {
            end(new GatewayException(
                    ErrorReason.WATCH_OVERFLOW,
                    "the watch fell more than " + fanout.capacity() + " changes behind; watch again"));
            return;
        }
        if (failure != null) {
            end(failure);
            return;
        }
        int budget = TURN;
        while (!synced && budget > 0 && out.isReady()) {
            budget--;
            if (snapshotIndex < snapshotPage.size()) {
                SandboxRecord sandbox = snapshotPage.get(snapshotIndex++);
                if (!visible.test(sandbox.workspace())) {
                    continue;
                }
                sentVersions.put(sandbox.id(), sandbox.resourceVersion());
                out.onNext(mapper.snapshotEvent(sandbox));
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
        while (synced && budget > 0 && out.isReady()) {
            WatchFanout.Delivery delivery = queue.poll();
            if (delivery == null) {
                return;
            }
            queued.decrementAndGet();
            budget--;
            if (isNew(delivery.change())) {
                out.onNext(delivery.encoded());
                lifecycle.observer().watchEventDelivered();
            }
        }
    }

    /** Drops changes the snapshot (or a later change) already covered. */
    private boolean isNew(SandboxChange change) {
        String id = change.sandbox().id();
        if (change.type() == SandboxChange.Type.REMOVED) {
            sentVersions.remove(id);
            return true;
        }
        if (!change.stateChanged()) {
            return true;
        }
        Long sent = sentVersions.get(id);
        if (sent != null && change.sandbox().resourceVersion() <= sent) {
            return false;
        }
        sentVersions.put(id, change.sandbox().resourceVersion());
        return true;
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
        queue.clear();
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
