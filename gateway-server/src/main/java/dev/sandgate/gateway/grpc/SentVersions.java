package dev.sandgate.gateway.grpc;

import dev.sandgate.gateway.lifecycle.SandboxChange;
import dev.sandgate.gateway.store.SandboxRecord;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * What one watch stream sent of each sandbox, so that the stream never goes back and sends each change once. Events
 * that change nothing stored (an observation of an older execution, a platform event) carry the sandbox as their
 * publisher read it, and come from other threads than the changes (on PostgreSQL from another path than the change
 * log), so they can be newer or older than the last change the stream sent. Two versions per sandbox:
 *
 * <ul>
 *   <li>shown: the newest resource version any event sent showed; no event older than it is sent;
 *   <li>changed: the newest change (or snapshot) sent; a change at or below it is sent already.
 * </ul>
 *
 * A REMOVED is sent only of a sandbox the stream showed (in its snapshot or a change). After a sandbox's REMOVED
 * nothing more of it is sent: an event that changes nothing may have read the sandbox before
 * its deletion and come after the REMOVED (on PostgreSQL the REMOVED comes through the change log, the event at once),
 * and would show the client a deleted sandbox again. Sandbox ids are never reused, so the stream remembers the ids it
 * removed; only lately (the last {@link #TOMBSTONE_NANOS}, at most {@link #MAX_TOMBSTONES}), as such an event is late
 * by the time between one read and one publish.
 *
 * <p>Not thread-safe: a stream's turns run one at a time.
 */
final class SentVersions {
    /** How long the stream remembers a removed sandbox. */
    static final long TOMBSTONE_NANOS = TimeUnit.SECONDS.toNanos(60);
    /** The most removed sandboxes the stream remembers (the oldest is forgotten first). */
    static final int MAX_TOMBSTONES = 4096;

    /** Per sandbox id: {shown, changed}. */
    private final Map<String, long[]> sent = new HashMap<>();
    /** Removed sandbox ids, oldest first, with when (System.nanoTime()) their REMOVED was sent. */
    private final LinkedHashMap<String, Long> removed = new LinkedHashMap<>();

    private final boolean wholeScope;
    private final LongSupplier nanoTime;

    /** A stream without a phase filter (see {@link #SentVersions(boolean, LongSupplier)}). */
    SentVersions() {
        this(true, System::nanoTime);
    }

    /**
     * @param wholeScope whether the stream's snapshot holds every sandbox in its scope and it wants every change of
     *     them (no phase filter; labels never change): then a change of a sandbox the snapshot did not hold, other than
     *     its ADDED, is a late copy of a change made before the snapshot, of a sandbox deleted before it, and is not
     *     sent (nor is its REMOVED)
     * @param nanoTime the clock of the tombstones (a test's)
     */
    SentVersions(boolean wholeScope, LongSupplier nanoTime) {
        this.wholeScope = wholeScope;
        this.nanoTime = nanoTime;
    }

    /** The snapshot sent this sandbox. */
    void snapshot(SandboxRecord sandbox) {
        sent.put(sandbox.id(), new long[] {sandbox.resourceVersion(), sandbox.resourceVersion()});
    }

    /** Whether to send {@code change}; records it if it is sent. */
    boolean admit(SandboxChange change) {
        String id = change.sandbox().id();
        // Most events meet no tombstone: the clock is read only while there are some, or for a REMOVED.
        boolean tombstones = !removed.isEmpty();
        if (tombstones) {
            forgetOldTombstones(nanoTime.getAsLong());
        }
        if (change.type() == SandboxChange.Type.REMOVED) {
            boolean shown = sent.remove(id) != null;
            if (removed.containsKey(id)) {
                return false;
            }
            removed.put(id, nanoTime.getAsLong());
            if (removed.size() > MAX_TOMBSTONES) {
                Iterator<String> oldest = removed.keySet().iterator();
                oldest.next();
                oldest.remove();
            }
            // A stream that never showed the sandbox (it was deleted before the stream's snapshot, and the change log
            // delivered its deletion after the stream opened) has nothing to remove.
            return shown;
        }
        if (tombstones && removed.containsKey(id)) {
            return false;
        }
        long version = change.sandbox().resourceVersion();
        long[] last = sent.get(id);
        if (last == null) {
            if (wholeScope && change.stateChanged() && change.type() != SandboxChange.Type.ADDED) {
                // Its ADDED came before the stream opened, yet its snapshot did not hold it: gone before the snapshot.
                return false;
            }
            last = new long[] {0, 0};
            sent.put(id, last);
        }
        if (version < last[0]) {
            return false;
        }
        if (change.stateChanged()) {
            if (version <= last[1]) {
                return false;
            }
            last[1] = version;
        }
        last[0] = version;
        return true;
    }

    private void forgetOldTombstones(long now) {
        Iterator<Long> oldest = removed.values().iterator();
        while (oldest.hasNext() && now - oldest.next() > TOMBSTONE_NANOS) {
            oldest.remove();
        }
    }
}
