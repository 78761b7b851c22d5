package dev.sandgate.gateway.grpc;

import static java.util.Objects.requireNonNull;

import dev.sandgate.api.v1.WatchSandboxesResponse;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.lifecycle.SandboxChange;
import dev.sandgate.gateway.lifecycle.WatchHub;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fans committed changes out to every open watch stream. It is the hub's only watch listener: the committing thread
 * just queues the change, and one thread ({@code sandgate-watch-fanout}) hands it to the streams that want it. A
 * change is mapped, its execution token minted and the event serialized once, whatever the number of streams, and
 * only if some stream wants it. Streams send on a small shared pool (no thread per stream); a stream that falls
 * {@link WatchStreamLimits#CAPACITY} changes behind ends with WATCH_OVERFLOW without slowing the others.
 */
final class WatchFanout implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(WatchFanout.class);

    /** One change as the streams that want it send it: the change (for filtering) and its bytes on the wire. */
    record Delivery(SandboxChange change, WatchWire.Encoded encoded) {}

    private final Function<SandboxChange, WatchSandboxesResponse> mapper;
    private final Set<WatchStream> streams = ConcurrentHashMap.newKeySet();
    private final int capacity;
    private final BlockingQueue<SandboxChange> changes;
    private final WatchHub.Registration registration;
    private final Thread thread;
    private volatile boolean closed;

    /**
     * @param mapper maps a change to its event (minting the execution token); called at most once per change
     */
    WatchFanout(WatchHub hub, Function<SandboxChange, WatchSandboxesResponse> mapper) {
        this(hub, mapper, WatchStreamLimits.CAPACITY);
    }

    /** @param capacity how many changes a stream (and the fan-out itself) may fall behind */
    WatchFanout(WatchHub hub, Function<SandboxChange, WatchSandboxesResponse> mapper, int capacity) {
        this.mapper = requireNonNull(mapper, "mapper is null");
        this.capacity = capacity;
        this.changes = new LinkedBlockingQueue<>(capacity);
        this.thread = Thread.ofPlatform().name("sandgate-watch-fanout").daemon().unstarted(this::run);
        this.registration = hub.register(this::committed);
        thread.start();
    }

    void add(WatchStream stream) {
        streams.add(stream);
    }

    void remove(WatchStream stream) {
        streams.remove(stream);
    }

    int capacity() {
        return capacity;
    }

    /** The streams open now. */
    Set<WatchStream> streams() {
        return streams;
    }

    /** On the committing thread: only queues. */
    private void committed(SandboxChange change) {
        if (streams.isEmpty() || closed) {
            return;
        }
        if (!changes.offer(change)) {
            // The fan-out itself fell a whole capacity behind: every stream may have missed this change.
            log.warn("watch fan-out fell {} changes behind: every watch stream ends with WATCH_OVERFLOW", capacity);
            for (WatchStream stream : streams) {
                stream.overflow();
            }
        }
    }

    private void run() {
        while (!closed) {
            SandboxChange change;
            try {
                change = changes.poll(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (change != null) {
                deliver(change);
            }
        }
    }

    private void deliver(SandboxChange change) {
        Delivery delivery = null;
        for (WatchStream stream : streams) {
            try {
                if (!stream.wants(change)) {
                    continue;
                }
                if (delivery == null) {
                    delivery = new Delivery(change, WatchWire.Encoded.of(mapper.apply(change)));
                }
                stream.offer(delivery);
            } catch (RuntimeException e) {
                log.warn("a watch stream could not take a change; it ends", e);
                stream.fail(new dev.sandgate.gateway.error.GatewayException(
                        ErrorReason.INTERNAL, "the watch stream failed; watch again"));
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        registration.close();
        thread.interrupt();
    }
}
