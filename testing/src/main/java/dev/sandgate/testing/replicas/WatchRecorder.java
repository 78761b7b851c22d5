package dev.sandgate.testing.replicas;

import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.WatchEventType;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import dev.sandgate.testing.GatewayProcess;
import io.grpc.stub.StreamObserver;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * One watch on one replica slot, opened again on the slot's next process when its process dies. Each stream must
 * be ordered: per sandbox, resource versions never go back (they do not always go up: an event that changes nothing
 * stored, such as a platform event or an observation of an older execution, repeats the last one), generations never
 * go back, nothing follows REMOVED; a stream opened again starts no lower than the last stream ended. It remembers the
 * last resource version seen of each sandbox, and which were removed. A sandbox deleted while no stream was open (its
 * replica was dead) has no REMOVED to show: a stream opened again tells it by its absence from the snapshot, as a
 * client that watches again learns it, so a known sandbox missing from the snapshot counts as removed. A sandbox
 * created and deleted while no stream was synced (from shortly before a stream ended, since changes in flight die with
 * their replica, until the next stream's SYNCED) cannot be seen at all: {@link #couldNotSee} tells those apart.
 */
final class WatchRecorder {
    private final int slot;
    private final ReplicaCluster cluster;
    private final Tally tally;
    private final Map<String, Long> lastVersion = new ConcurrentHashMap<>();
    private final Map<String, Boolean> removed = new ConcurrentHashMap<>();
    private volatile GatewayProcess watched;
    private volatile boolean open;
    private volatile boolean closing;
    /** Changes committed this long before a stream ended may die with its replica, undelivered. */
    private static final long IN_FLIGHT_NANOS = TimeUnit.SECONDS.toNanos(5);
    /** The periods, in System.nanoTime(), when no stream of this slot was synced: from the end of one to the next's SYNCED. */
    private final List<long[]> gaps = new CopyOnWriteArrayList<>();

    private volatile long gapStart = -1;

    WatchRecorder(int slot, ReplicaCluster cluster, Tally tally) {
        this.slot = slot;
        this.cluster = cluster;
        this.tally = tally;
    }

    /** Opens the watch again if its stream ended and the slot's process is another, live one. */
    synchronized void keepOpen() {
        GatewayProcess process = cluster.process(slot);
        if (closing || (open && process == watched) || !process.alive()) {
            return;
        }
        if (watched != null) {
            tally.watchReopens.incrementAndGet();
        }
        watched = process;
        open = true;
        SandboxServiceGrpc.newStub(process.channel())
                .watchSandboxes(
                        WatchSandboxesRequest.newBuilder()
                                .setWorkspace(LifecycleClient.WORKSPACE)
                                .build(),
                        new Stream(process));
    }

    /** The last resource version this slot's watches showed of {@code sandboxId}; -1 if removed, 0 if never seen. */
    long seen(String sandboxId) {
        return removed.containsKey(sandboxId) ? -1 : lastVersion.getOrDefault(sandboxId, 0L);
    }

    /**
     * Whether a sandbox that no stream of this slot ever showed, whose create was sent at {@code createSent} and whose
     * delete was first sent at {@code deleteSent}, may have lived entirely while no stream of this slot was synced.
     * Its delete may be answered long after it committed (its replica died before answering, and the client's retry
     * on another replica replays it), so the bound is when it was sent: a delete sent after a stream's SYNCED commits
     * after that stream's snapshot, which then showed the sandbox, or its ADDED followed.
     */
    boolean couldNotSee(long createSent, long deleteSent) {
        return deleteSent != 0
                && gaps.stream().anyMatch(gap -> createSent >= gap[0] - IN_FLIGHT_NANOS && deleteSent <= gap[1]);
    }

    void close() {
        closing = true;
    }

    private final class Stream implements StreamObserver<WatchSandboxesResponse> {
        private final GatewayProcess process;
        private final Map<String, Long> versions = new HashMap<>();
        private final Map<String, Long> generations = new HashMap<>();
        private final Set<String> snapshot = new HashSet<>();

        Stream(GatewayProcess process) {
            this.process = process;
        }

        @Override
        public synchronized void onNext(WatchSandboxesResponse event) {
            if (event.getType() == WatchEventType.SYNCED) {
                if (gapStart >= 0) {
                    gaps.add(new long[] {gapStart, System.nanoTime()});
                    gapStart = -1;
                }
                lastVersion.keySet().stream()
                        .filter(known -> !snapshot.contains(known))
                        .forEach(gone -> removed.put(gone, true));
                return;
            }
            String id = event.getSandbox().getId();
            if (event.getType() == WatchEventType.SNAPSHOT) {
                snapshot.add(id);
            }
            long version = event.getSandbox().getResourceVersion();
            long generation = event.getSandbox().getCurrentExecution().getGeneration();
            String where = "watch on replica " + slot + " (pid " + process.pid() + "), sandbox " + id + ": ";
            if (removed.containsKey(id)) {
                tally.violation(where + event.getType() + " after REMOVED");
            }
            Long before = versions.get(id);
            if (before != null && version < before) {
                tally.violation(where + event.getType() + " at resource version " + version + " after " + before);
            }
            if (before == null && version < lastVersion.getOrDefault(id, 0L)) {
                tally.violation(where + "a new stream starts at resource version " + version + ", an earlier one"
                        + " showed " + lastVersion.get(id));
            }
            if (generation < generations.getOrDefault(id, 0L)) {
                tally.violation(where + "generation " + generation + " after " + generations.get(id));
            }
            versions.put(id, Math.max(version, versions.getOrDefault(id, 0L)));
            generations.put(id, Math.max(generation, generations.getOrDefault(id, 0L)));
            lastVersion.merge(id, version, Math::max);
            if (event.getType() == WatchEventType.REMOVED) {
                removed.put(id, true);
            }
        }

        @Override
        public void onError(Throwable t) {
            ended();
        }

        @Override
        public void onCompleted() {
            ended();
        }

        private void ended() {
            synchronized (WatchRecorder.this) {
                if (watched == process) {
                    open = false;
                    if (gapStart < 0) {
                        gapStart = System.nanoTime();
                    }
                }
            }
        }
    }
}
