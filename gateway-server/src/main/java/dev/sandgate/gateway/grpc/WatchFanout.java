package dev.sandgate.gateway.grpc;

import static java.util.Objects.requireNonNull;

import dev.sandgate.api.v1.WatchSandboxesResponse;
import dev.sandgate.gateway.lifecycle.SandboxChange;
import dev.sandgate.gateway.lifecycle.WatchHub;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fans committed changes out to every open watch stream. It is the hub's only watch listener: the committing thread
 * just queues the change, and one thread ({@code sandgate-watch-fanout}) appends it to a log that every stream reads
 * at its own position. A change is mapped, its execution token minted and its event serialized at most once, by the
 * first stream that sends it, whatever the number of streams.
 *
 * <p>No stream has a thread or a task of its own. The streams are spread over a few lanes; a lane's turn runs on the
 * shared watch executor and lets each of its streams send what it can, so that a change costs a task per lane, not
 * per stream. A stream that falls {@link WatchStreamLimits#CAPACITY} changes behind the log ends with WATCH_OVERFLOW
 * without slowing the others.
 */
final class WatchFanout implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(WatchFanout.class);
    private static final int LANES = Math.max(2, Runtime.getRuntime().availableProcessors());
    private static final int BATCH = 256;

    /**
     * One change in the log, at {@code sequence}: its event is encoded on first demand, once.
     *
     * <p>A slot of the log is reused a few capacities later: a reader that finds a delivery whose sequence is
     * not the one it asked for fell behind.
     */
    static final class Delivery {
        private final long sequence;
        private final SandboxChange change;
        private final Function<SandboxChange, WatchSandboxesResponse> mapper;
        private volatile WatchWire.Encoded encoded;

        Delivery(long sequence, SandboxChange change, Function<SandboxChange, WatchSandboxesResponse> mapper) {
            this.sequence = sequence;
            this.change = change;
            this.mapper = mapper;
        }

        long sequence() {
            return sequence;
        }

        SandboxChange change() {
            return change;
        }

        /** The event on the wire: mapped and serialized by the first caller, shared by the others. */
        WatchWire.Encoded encoded() {
            WatchWire.Encoded done = encoded;
            if (done != null) {
                return done;
            }
            synchronized (this) {
                if (encoded == null) {
                    encoded = WatchWire.Encoded.of(mapper.apply(change));
                }
                return encoded;
            }
        }
    }

    private final Function<SandboxChange, WatchSandboxesResponse> mapper;
    private final Executor executor;
    private final Set<WatchStream> streams = ConcurrentHashMap.newKeySet();
    private final Lane[] lanes;
    private final AtomicInteger nextLane = new AtomicInteger();
    private final int capacity;
    private final Delivery[] ring;
    private final BlockingQueue<SandboxChange> changes;
    private final WatchHub.Registration registration;
    private final WatchHub.Registration missedRegistration;
    private final Thread thread;
    /** The sequence the next change gets; written by the fan-out thread only, after the change's slot. */
    private volatile long head;

    private volatile boolean closed;

    /**
     * @param mapper maps a change to its event (minting the execution token); called at most once per change
     * @param executor runs the lanes' turns (a small pool: no stream has a thread of its own)
     */
    WatchFanout(WatchHub hub, Function<SandboxChange, WatchSandboxesResponse> mapper, Executor executor) {
        this(hub, mapper, executor, WatchStreamLimits.CAPACITY);
    }

    /** @param capacity how many changes a stream (and the fan-out itself) may fall behind */
    WatchFanout(WatchHub hub, Function<SandboxChange, WatchSandboxesResponse> mapper, Executor executor, int capacity) {
        if (capacity < 1 || capacity > 1 << 24) {
            throw new IllegalArgumentException("capacity must be in [1, 2^24], got " + capacity);
        }
        this.mapper = requireNonNull(mapper, "mapper is null");
        this.executor = requireNonNull(executor, "executor is null");
        this.capacity = capacity;
        // At least twice the capacity: a stream is ended as overflowed long before its slot is reused.
        this.ring = new Delivery[Integer.highestOneBit(capacity) << 2];
        this.changes = new LinkedBlockingQueue<>(capacity);
        this.lanes = new Lane[LANES];
        for (int i = 0; i < lanes.length; i++) {
            lanes[i] = new Lane();
        }
        this.thread = Thread.ofPlatform().name("sandgate-watch-fanout").daemon().unstarted(this::run);
        this.registration = hub.register(this::committed);
        this.missedRegistration = hub.onMissed(this::missed);
        thread.start();
    }

    /** The lane a new stream joins (round robin). */
    Lane nextLane() {
        return lanes[Math.floorMod(nextLane.getAndIncrement(), lanes.length)];
    }

    /**
     * Adds {@code stream} to {@code lane} and gives the lane a turn.
     *
     * @throws RejectedExecutionException when the executor is shut down (nothing is left registered)
     */
    void add(WatchStream stream, Lane lane) {
        streams.add(stream);
        lane.streams.add(stream);
        if (!lane.schedule()) {
            remove(stream);
            throw new RejectedExecutionException("the watch executor is shut down");
        }
    }

    void remove(WatchStream stream) {
        streams.remove(stream);
        for (Lane lane : lanes) {
            lane.streams.remove(stream);
        }
    }

    int capacity() {
        return capacity;
    }

    /** The streams open now. */
    Set<WatchStream> streams() {
        return streams;
    }

    /** The sequence the next change will get: a stream has read everything before it. */
    long head() {
        return head;
    }

    /**
     * The change at {@code sequence} (below {@link #head()}), or null if its slot was reused: the reader fell more than
     * the log's length behind.
     */
    Delivery at(long sequence) {
        Delivery delivery = ring[(int) (sequence & (ring.length - 1))];
        return delivery != null && delivery.sequence() == sequence ? delivery : null;
    }

    /** On the committing thread: only queues. */
    private void committed(SandboxChange change) {
        if (streams.isEmpty() || closed) {
            if (log.isTraceEnabled()) {
                log.trace(
                        "fan-out: no stream for {} sandbox={} version={}",
                        change.type(),
                        change.sandbox().id(),
                        change.sandbox().resourceVersion());
            }
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

    /** Changes may have been missed (the replica's change-log follower fell behind): every stream starts over. */
    private void missed() {
        if (!streams.isEmpty()) {
            log.warn("this replica may have missed changes: every watch stream ends with WATCH_OVERFLOW");
        }
        for (WatchStream stream : streams) {
            stream.overflow();
        }
    }

    private void run() {
        List<SandboxChange> batch = new ArrayList<>(BATCH);
        while (!closed) {
            SandboxChange first;
            try {
                first = changes.poll(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (first == null) {
                continue;
            }
            batch.add(first);
            changes.drainTo(batch, BATCH - 1);
            long next = head;
            for (SandboxChange change : batch) {
                if (log.isTraceEnabled()) {
                    log.trace(
                            "fan-out: {} {} sandbox={} version={} at {}",
                            change.type(),
                            change.stateChanged() ? "change" : "event",
                            change.sandbox().id(),
                            change.sandbox().resourceVersion(),
                            next);
                }
                ring[(int) (next & (ring.length - 1))] = new Delivery(next, change, mapper);
                next++;
            }
            head = next;
            batch.clear();
            for (Lane lane : lanes) {
                lane.wake();
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        registration.close();
        missedRegistration.close();
        thread.interrupt();
    }

    /**
     * Some of the streams, served one turn at a time on the shared executor. A turn is scheduled when the log grows, a
     * stream's client lets more through, or a stream must end; in a turn each stream sends at most {@link
     * WatchStream#TURN} messages, and the lane takes another turn while any stream has more to send.
     */
    final class Lane {
        private final List<WatchStream> streams = new CopyOnWriteArrayList<>();
        private final AtomicBoolean scheduled = new AtomicBoolean();
        private volatile boolean pending;

        /** Asks for a turn (from any thread); returns at once. */
        void wake() {
            pending = true;
            schedule();
        }

        private boolean schedule() {
            pending = true;
            if (!scheduled.compareAndSet(false, true)) {
                return true;
            }
            try {
                executor.execute(this::turn);
                return true;
            } catch (RejectedExecutionException e) {
                // The gateway is stopping: the streams' calls are being cancelled with the server.
                scheduled.set(false);
                for (WatchStream stream : streams) {
                    stream.abandoned();
                    remove(stream);
                }
                return false;
            }
        }

        private void turn() {
            boolean more = false;
            try {
                pending = false;
                for (WatchStream stream : streams) {
                    more |= stream.turn();
                }
            } finally {
                scheduled.set(false);
            }
            if (more || pending) {
                schedule();
            }
        }
    }
}
