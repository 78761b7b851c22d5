package dev.sandgate.gateway.grpc;

import dev.sandgate.api.v1.WatchSandboxesResponse;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.lifecycle.Lifecycle;
import dev.sandgate.gateway.lifecycle.SandboxChange;
import dev.sandgate.gateway.lifecycle.WatchHub;
import dev.sandgate.gateway.store.SandboxFilter;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.StoreTransaction.SandboxKey;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One WatchSandboxes stream: registers for changes first (buffering them), sends a snapshot of every matching
 * sandbox and a SYNCED marker, then the buffered and later changes, skipping those the snapshot already covered
 * (by resource version). Respects the client's flow control; a client that falls more than {@link #CAPACITY} changes
 * behind gets RESOURCE_EXHAUSTED (reason WATCH_OVERFLOW) and watches again. When the gateway shuts down, the stream
 * ends with UNAVAILABLE (reason GATEWAY_SHUTTING_DOWN), so that its client watches again elsewhere or later.
 */
final class WatchStream {
    static final int CAPACITY = WatchStreamLimits.CAPACITY;
    private static final int SNAPSHOT_PAGE = 500;
    private static final Logger log = LoggerFactory.getLogger(WatchStream.class);

    private final Lifecycle lifecycle;
    private final ApiMapper mapper;
    private final SandboxFilter filter;
    private final SandboxFilter removalFilter;
    private final ServerCallStreamObserver<WatchSandboxesResponse> out;
    private final BlockingQueue<SandboxChange> queue = new LinkedBlockingQueue<>(CAPACITY);
    private final Semaphore ready = new Semaphore(0);
    private final Map<String, Long> sentVersions = new HashMap<>();
    private volatile boolean cancelled;
    private volatile boolean overflowed;
    private volatile boolean shuttingDown;
    private Set<WatchStream> open = Set.of();
    private volatile Thread drainer;
    private WatchHub.Registration registration;

    private WatchStream(
            Lifecycle lifecycle,
            ApiMapper mapper,
            SandboxFilter filter,
            ServerCallStreamObserver<WatchSandboxesResponse> out) {
        this.lifecycle = lifecycle;
        this.mapper = mapper;
        this.filter = filter;
        this.removalFilter = new SandboxFilter(filter.workspace(), filter.labels(), Set.of());
        this.out = out;
    }

    /**
     * Starts a stream on {@code executor}. It is in {@code open} from now until it has ended, however it ends.
     *
     * @throws java.util.concurrent.RejectedExecutionException when the executor is shut down (nothing is left
     *     registered, and the stream is not in {@code open})
     */
    static void start(
            Lifecycle lifecycle,
            ApiMapper mapper,
            SandboxFilter filter,
            ServerCallStreamObserver<WatchSandboxesResponse> out,
            Executor executor,
            Set<WatchStream> open) {
        WatchStream stream = new WatchStream(lifecycle, mapper, filter, out);
        stream.open = open;
        out.setOnCancelHandler(stream::cancel);
        out.setOnReadyHandler(stream.ready::release);
        stream.registration = lifecycle.hub().register(stream::offer);
        open.add(stream);
        lifecycle.observer().watchStreamOpened();
        try {
            executor.execute(stream::run);
        } catch (RuntimeException e) {
            lifecycle.observer().watchStreamClosed();
            open.remove(stream);
            stream.registration.close();
            throw e;
        }
    }

    /**
     * Ends the stream with UNAVAILABLE (reason GATEWAY_SHUTTING_DOWN) from its own thread, as soon as that thread is
     * not inside a send. Returns at once.
     */
    void shutDown() {
        shuttingDown = true;
        Thread thread = drainer;
        if (thread != null) {
            thread.interrupt();
        }
    }

    private void offer(SandboxChange change) {
        boolean wanted = change.type() == SandboxChange.Type.REMOVED
                ? removalFilter.matches(change.sandbox())
                : filter.matches(change.sandbox());
        if (wanted && !cancelled && !queue.offer(change)) {
            lifecycle.observer().watchEventDropped();
            overflowed = true;
            Thread thread = drainer;
            if (thread != null) {
                thread.interrupt();
            }
        }
    }

    private void cancel() {
        cancelled = true;
        registration.close();
        Thread thread = drainer;
        if (thread != null) {
            thread.interrupt();
        }
    }

    private void run() {
        drainer = Thread.currentThread();
        try {
            sendSnapshot();
            send(ApiMapper.syncedEvent());
            while (!ended()) {
                if (overflowed) {
                    throw new GatewayException(
                            ErrorReason.WATCH_OVERFLOW,
                            "the watch fell more than " + CAPACITY + " changes behind; watch again");
                }
                SandboxChange change = queue.take();
                if (isNew(change)) {
                    send(mapper.watchEvent(change));
                }
            }
        } catch (InterruptedException e) {
            if (overflowed && !cancelled && !shuttingDown) {
                fail(new GatewayException(
                        ErrorReason.WATCH_OVERFLOW,
                        "the watch fell more than " + CAPACITY + " changes behind; watch again"));
            }
        } catch (RuntimeException e) {
            if (!cancelled && !shuttingDown) {
                fail(e);
            }
        } finally {
            registration.close();
            drainer = null;
            Thread.interrupted();
            if (shuttingDown && !cancelled) {
                fail(new GatewayException(
                        ErrorReason.GATEWAY_SHUTTING_DOWN, "the gateway is shutting down; watch again"));
            }
            open.remove(this);
            lifecycle.observer().watchStreamClosed();
        }
    }

    private boolean ended() {
        return cancelled || shuttingDown;
    }

    private void sendSnapshot() throws InterruptedException {
        Optional<SandboxKey> after = Optional.empty();
        while (!ended()) {
            Lifecycle.Page page = lifecycle.list(filter, after, SNAPSHOT_PAGE);
            for (SandboxRecord sandbox : page.sandboxes()) {
                sentVersions.put(sandbox.id(), sandbox.resourceVersion());
                send(mapper.snapshotEvent(sandbox));
            }
            if (!page.more()) {
                return;
            }
            SandboxRecord last = page.sandboxes().getLast();
            after = Optional.of(new SandboxKey(last.workspace(), last.name()));
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

    private void send(WatchSandboxesResponse response) throws InterruptedException {
        while (!out.isReady() && !ended()) {
            ready.acquire();
        }
        if (!ended()) {
            out.onNext(response);
            lifecycle.observer().watchEventDelivered();
        }
    }

    private void fail(RuntimeException e) {
        try {
            out.onError(ErrorMapper.toStatusException(e));
        } catch (RuntimeException closed) {
            log.debug("watch stream already closed", closed);
        }
    }
}
