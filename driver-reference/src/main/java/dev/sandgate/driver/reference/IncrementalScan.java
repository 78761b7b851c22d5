package dev.sandgate.driver.reference;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.toolkit.PollingWatch;
import dev.sandgate.driver.toolkit.SnapshotDiff;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * The scans of one watch subscription, as an engine's event stream with a periodic resync would deliver them.
 *
 * <p>The driver reports every key it changes ({@link #changed}); a scan looks at those keys, and at one slice of the
 * others: the records are split into {@code sweepEvery} slices by their key's hash, and scan {@code n} looks at slice
 * {@code n mod sweepEvery} (a stat each), so that a change made by another process (or a test probe) behind this
 * driver's back is seen too, within {@code sweepEvery} polls. The first scan of every {@code sweepEvery} lists the
 * gateway's folder, for records added or removed behind the driver's back. A record is reread only when its {@link
 * DirectoryBackend.Version} changed; every {@code fullEvery / sweepEvery}-th round of {@code sweepEvery} scans rereads
 * every record it looks at, so that a change the version cannot tell apart is still seen. Over thousands of stored
 * sandboxes this keeps a watch's cost proportional to the changes instead of to the sandboxes, and spreads the looks at
 * every record evenly over the scans instead of spending them all in one (that burst took a second of one core's time
 * with 26,000 records).
 *
 * <p>The version is taken before the record is read: a record that changes in between is read as new and kept under the
 * older version, so the next look reads it again rather than missing the change. {@link #changed} may be called from
 * any thread; everything else from the subscription's one thread.
 */
final class IncrementalScan {
    /** One sandbox as a scan saw it: the resource incarnation and what the driver observed of it. */
    record Seen(String backendId, SandboxObservation observation) {
        Seen {
            requireNonNull(backendId, "backendId is null");
            requireNonNull(observation, "observation is null");
        }
    }

    /** The sandboxes whose observation changed, and the last observation of those that vanished. */
    record Delta(List<Seen> changed, List<Seen> removed) {
        Delta {
            changed = List.copyOf(changed);
            removed = List.copyOf(removed);
        }
    }

    /**
     * One record as the last look left it: its version and what the driver made of it. Not its file's path, which a
     * look builds again from the key: kept for every record, the paths held about 1.5 MiB of heap with 13,000 records
     * (the gateway benchmark's live heap after a full collection: 30 to 31 MiB without them, 31 to 32 with).
     */
    private record Entry(DirectoryBackend.Version version, Optional<Seen> seen) {}

    private final DirectoryBackend backend;
    private final String gatewayId;
    private final Function<StoredResource, Optional<Seen>> toSeen;
    private final int sweepEvery;
    /** Every how many rounds of {@code sweepEvery} scans a round rereads the records it looks at. */
    private final int fullRounds;
    /** The folder of the gateway's records. */
    private final Path records;

    private final Set<String> marked = ConcurrentHashMap.newKeySet();
    /** What the driver last wrote under a marked key, and that record's version then; taken by the key's next look. */
    private final ConcurrentHashMap<String, Written> written = new ConcurrentHashMap<>();

    private Map<String, Entry> known = new HashMap<>();
    private long scans;
    private long reads;
    private long told;
    private long looks;

    /**
     * @param toSeen what the driver makes of a record: empty for a resource that is not one of its sandboxes
     * @param sweepEvery over how many scans every record is looked at once (1: every scan)
     * @param fullEvery over about how many scans every record is reread once (rounded down to whole rounds of {@code
     *     sweepEvery} scans, at least one)
     */
    IncrementalScan(
            DirectoryBackend backend,
            String gatewayId,
            Function<StoredResource, Optional<Seen>> toSeen,
            int sweepEvery,
            int fullEvery) {
        this.backend = requireNonNull(backend, "backend is null");
        this.gatewayId = requireNonNull(gatewayId, "gatewayId is null");
        this.toSeen = requireNonNull(toSeen, "toSeen is null");
        if (sweepEvery < 1 || fullEvery < 1) {
            throw new IllegalArgumentException("sweepEvery and fullEvery must be at least 1");
        }
        this.sweepEvery = sweepEvery;
        this.fullRounds = Math.max(1, fullEvery / sweepEvery);
        this.records = backend.recordsFolder(gatewayId);
    }

    /** A record as the driver wrote it, and its version once written. */
    private record Written(DirectoryBackend.Version version, StoredResource resource) {}

    /** The driver changed the record under {@code key}: the next scan looks at it. Any thread. */
    void changed(String key) {
        written.remove(requireNonNull(key, "key is null"));
        marked.add(key);
    }

    /**
     * Like {@link #changed}, but the look need not read the record if it still has {@code version}: the driver has just
     * written it, and a scan would read back what it wrote. Saves its open, read and close (five of six system calls)
     * on every lifecycle change; a record changed behind the driver's back has another version and is read.
     */
    void wrote(String key, DirectoryBackend.Version version, StoredResource resource) {
        requireNonNull(key, "key is null");
        written.put(
                key,
                new Written(requireNonNull(version, "version is null"), requireNonNull(resource, "resource is null")));
        marked.add(key);
    }

    /** Every sandbox there is now. */
    Map<String, Seen> first() {
        scans = 0;
        drainMarked(); // every record is read now; a key marked from now on is looked at by the next scan
        written.clear();
        known = new HashMap<>();
        var seen = new HashMap<String, Seen>();
        for (String key : backend.keys(gatewayId)) {
            Entry entry = look(key, null, true);
            if (entry != null) {
                known.put(key, entry);
                entry.seen().ifPresent(s -> seen.put(key, s));
            }
        }
        return seen;
    }

    /** What changed since the previous scan. */
    Delta next() {
        scans++;
        int slice = (int) ((scans - 1) % sweepEvery);
        long round = (scans - 1) / sweepEvery + 1;
        boolean reread = round % fullRounds == 0;
        var changed = new ArrayList<Seen>();
        var removed = new ArrayList<Seen>();
        var looked = new HashSet<String>();
        if (slice == 0) {
            // A new round: what was added or removed behind this driver's back.
            Set<String> listed = new HashSet<>(backend.keys(gatewayId));
            for (var it = known.entrySet().iterator(); it.hasNext(); ) {
                var entry = it.next();
                if (!listed.contains(entry.getKey())) {
                    it.remove();
                    looked.add(entry.getKey());
                    compare(entry.getValue(), null, changed, removed);
                }
            }
            for (String key : listed) {
                if (!known.containsKey(key) && looked.add(key)) {
                    lookAt(key, true, changed, removed);
                }
            }
        }
        for (String key : drainMarked()) {
            if (looked.add(key)) {
                lookAt(key, reread && inSlice(key, slice), changed, removed);
            }
        }
        var mine = new ArrayList<String>();
        for (String key : known.keySet()) {
            if (inSlice(key, slice) && !looked.contains(key)) {
                mine.add(key);
            }
        }
        for (String key : mine) {
            lookAt(key, reread, changed, removed);
        }
        return new Delta(changed, removed);
    }

    private boolean inSlice(String key, int slice) {
        return Math.floorMod(key.hashCode(), sweepEvery) == slice;
    }

    private void lookAt(String key, boolean reread, List<Seen> changed, List<Seen> removed) {
        Entry before = known.get(key);
        Entry after = look(key, before, reread);
        if (after == null) {
            known.remove(key);
        } else {
            known.put(key, after);
        }
        compare(before, after, changed, removed);
    }

    @SuppressWarnings("ModifyCollectionInEnhancedForLoop") // a concurrent set: its iterator tolerates removal
    private Collection<String> drainMarked() {
        var keys = new ArrayList<String>(marked.size());
        for (String key : marked) {
            marked.remove(key);
            keys.add(key);
        }
        return keys;
    }

    /** The record under {@code key} now (the same entry if its version did not change), or null if it is gone. */
    private Entry look(String key, Entry before, boolean reread) {
        looks++;
        Written hint = written.remove(key);
        Optional<DirectoryBackend.Version> version =
                DirectoryBackend.version(DirectoryBackend.recordFile(records, key));
        if (version.isEmpty()) {
            return null;
        }
        if (!reread && before != null && before.version().equals(version.get())) {
            return before;
        }
        if (!reread && hint != null && hint.version().equals(version.get())) {
            told++;
            return new Entry(version.get(), toSeen.apply(hint.resource()));
        }
        Optional<StoredResource> resource = backend.read(gatewayId, key);
        if (resource.isEmpty()) {
            return null;
        }
        reads++;
        return new Entry(version.get(), toSeen.apply(resource.get()));
    }

    /** What the watch delivers for one record going from {@code before} to {@code after} (null: absent). */
    @SuppressWarnings("ReferenceEquality") // the same entry object means nothing was rescanned: a fast path
    private static void compare(Entry before, Entry after, List<Seen> changed, List<Seen> removed) {
        if (before == after) {
            return;
        }
        Optional<Seen> was = before == null ? Optional.empty() : before.seen();
        Optional<Seen> is = after == null ? Optional.empty() : after.seen();
        if (is.isPresent()) {
            if (!is.equals(was)) {
                changed.add(is.get());
            }
        } else if (was.isPresent()) {
            removed.add(was.get());
        }
    }

    /** How many records the scans have read so far (for tests). */
    long reads() {
        return reads;
    }

    /** How many records the scans took as the driver said it wrote them, without reading them (for tests). */
    long told() {
        return told;
    }

    /** How many records the scans have looked at (a stat each) so far (for tests). */
    long looks() {
        return looks;
    }

    /** This scan as a watch's poller: each delta as snapshots of the changed sandboxes and deletions of the vanished. */
    PollingWatch.Poller poller() {
        return new PollingWatch.Poller() {
            @Override
            public List<SandboxEvent> first() {
                return SnapshotDiff.events(
                        observations(IncrementalScan.this.first().values()), List.of());
            }

            @Override
            public List<SandboxEvent> next() {
                Delta delta = IncrementalScan.this.next();
                return SnapshotDiff.events(observations(delta.changed()), observations(delta.removed()));
            }
        };
    }

    private static List<SandboxObservation> observations(Collection<Seen> seen) {
        return seen.stream().map(Seen::observation).toList();
    }
}
