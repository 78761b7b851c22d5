package dev.sandgate.driver.reference;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.toolkit.PollingWatch;
import dev.sandgate.driver.toolkit.SnapshotDiff;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiPredicate;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The scans of one watch subscription, as an engine's event stream with a periodic resync would deliver them.
 *
 * <p>The driver reports every key it changes ({@link #changed}); a scan looks at those keys, and at one slice of the
 * others: scans go in rounds of {@code sweepEvery} slices (more when a slice would hold more than {@link
 * #MAX_LOOKS_PER_SCAN} records), the records split by their key's hash, and each scan looks at one slice (a stat each),
 * so that a change made by another process (or a test probe) behind this driver's back is seen too, within a round.
 * The first scan of a round lists the gateway's folder, for records added or removed behind the driver's back, if the
 * folder changed since it was last listed. A record is reread only when its {@link DirectoryBackend.Version} changed;
 * every {@code fullEvery / sweepEvery}-th round rereads every record it looks at (and lists the folder), so that a
 * change the version cannot tell apart is still seen. Over many stored sandboxes this keeps a watch's cost per poll
 * bounded and proportional to the changes instead of to the sandboxes, and its memory to a few fields per record.
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
    record Delta(List<Seen> changed, List<SandboxObservation> removed) {
        Delta {
            changed = List.copyOf(changed);
            removed = List.copyOf(removed);
        }
    }

    /**
     * One record as the last look left it: its version, as two numbers, and what the driver made of it, or null for a
     * resource that is not a sandbox. Not the record's path, its whole observation nor its backend id: kept for every
     * record, those filled the heap with a million records; the few fields here (values many sandboxes share kept
     * once, by an {@link Interner}) are what a change and a deletion event need.
     */
    private record Entry(long modified, long sizeAndKey, Sandbox sandbox) {}

    /** What a watch delivers of one sandbox, less its key; {@code incarnation} tells a replaced resource apart. */
    private record Sandbox(
            String id,
            String workspace,
            String name,
            long generation,
            SandboxState state,
            String digest,
            Map<String, String> labels,
            String detail,
            int incarnation) {
        SandboxObservation observation() {
            return new SandboxObservation(
                    new SandboxRef(id, workspace, name), generation, state, digest, labels, detail);
        }
    }

    /** A scan looks at no more than about this many records of its slice (a stat each). */
    static final int MAX_LOOKS_PER_SCAN = 1_000;
    /** A folder changed this recently may change again within the same clock tick: listed again next round. */
    private static final long RACY_FOLDER_NANOS = 2_000_000_000L;

    private static final long RACY = Long.MIN_VALUE;

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

    private final Interner interner = new Interner();
    private Map<String, Entry> known = new HashMap<>();
    /** The folder's time when last listed, or {@link #RACY}. */
    private long listed = RACY;

    private long rounds;
    /** The current round: its slices, the scan's slice, the keys it looks at by slice, what it does. */
    private int slices = 1;

    private int slice;
    private String[] roundKeys = new String[0];
    private int[] sliceStart = {0, 0};
    private boolean reread;
    private boolean relist;
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
        var seen = new HashMap<String, Seen>();
        first((key, s) -> {
            seen.put(key, s);
            return true;
        });
        return seen;
    }

    /**
     * Every sandbox there is now, one at a time to {@code each}, which answers false to stop (the subscription is
     * closed): the first scan of many sandboxes is never held whole. Returns false if stopped.
     */
    boolean first(BiPredicate<String, Seen> each) {
        rounds = 0;
        slices = 1;
        slice = 0;
        drainMarked(); // every record is read now; a key marked from now on is looked at by the next scan
        written.clear();
        known = new HashMap<>();
        listed = folderModified();
        for (String key : backend.keys(gatewayId)) {
            Looked looked = look(key, null, true);
            if (looked != null) {
                known.put(key, looked.entry());
                if (looked.seen() != null && !each.test(key, looked.seen())) {
                    return false;
                }
            }
        }
        return true;
    }

    /** What changed since the previous scan. */
    Delta next() {
        if (slice + 1 >= slices) {
            startRound();
        } else {
            slice++;
        }
        var changed = new ArrayList<Seen>();
        var removed = new ArrayList<SandboxObservation>();
        var looked = new HashSet<String>();
        if (slice == 0 && relist) {
            // What was added or removed behind this driver's back.
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
                lookAt(key, reread && inSlice(key), changed, removed);
            }
        }
        for (int i = sliceStart[slice]; i < sliceStart[slice + 1]; i++) {
            String key = roundKeys[i];
            if (looked.add(key)) {
                lookAt(key, reread, changed, removed);
            }
        }
        return new Delta(changed, removed);
    }

    /**
     * A new round: its number of slices (more than {@code sweepEvery} when there are so many records that a slice
     * would take more than {@link #MAX_LOOKS_PER_SCAN} looks), the keys known now grouped by slice, whether it rereads
     * every record, and whether the folder must be listed: only if it changed since the last listing (its time was
     * then older than {@link #RACY_FOLDER_NANOS}, so that a change within the same clock tick is not missed), and on
     * rereading rounds.
     */
    private void startRound() {
        rounds++;
        slice = 0;
        reread = rounds % fullRounds == 0;
        slices = Math.max(sweepEvery, known.size() / MAX_LOOKS_PER_SCAN + 1);
        long folder = folderModified();
        relist = reread || folder != listed || listed == RACY;
        if (relist) {
            listed = folder;
        }
        var counts = new int[slices + 1];
        for (String key : known.keySet()) {
            counts[sliceOf(key) + 1]++;
        }
        for (int i = 1; i <= slices; i++) {
            counts[i] += counts[i - 1];
        }
        sliceStart = counts.clone();
        roundKeys = new String[known.size()];
        for (String key : known.keySet()) {
            roundKeys[counts[sliceOf(key)]++] = key;
        }
    }

    private int sliceOf(String key) {
        return Math.floorMod(key.hashCode(), slices);
    }

    private boolean inSlice(String key) {
        return sliceOf(key) == slice;
    }

    /** The folder's modification time in nanoseconds, or {@link #RACY} if it is too recent to tell later changes. */
    private long folderModified() {
        try {
            long modified = Files.getLastModifiedTime(records).to(TimeUnit.NANOSECONDS);
            return System.currentTimeMillis() * 1_000_000L - modified < RACY_FOLDER_NANOS ? RACY : modified;
        } catch (NoSuchFileException e) {
            return RACY;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the attributes of " + records, e);
        }
    }

    @SuppressWarnings("ReferenceEquality") // the same entry object means the record did not change: a fast path
    private void lookAt(String key, boolean reread, List<Seen> changed, List<SandboxObservation> removed) {
        Entry before = known.get(key);
        Looked looked = look(key, before, reread);
        Entry after = looked == null ? null : looked.entry();
        if (after == null) {
            known.remove(key);
        } else {
            known.put(key, after);
        }
        if (before != after) {
            compare(before, looked, changed, removed);
        }
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

    /** A look's entry, and the sandbox it read (null if it read nothing or the record is not a sandbox). */
    private record Looked(Entry entry, Seen seen) {}

    /** The record under {@code key} now (the same entry if its version did not change), or null if it is gone. */
    private Looked look(String key, Entry before, boolean reread) {
        looks++;
        Written hint = written.remove(key);
        Optional<DirectoryBackend.Version> version =
                DirectoryBackend.version(DirectoryBackend.recordFile(records, key));
        if (version.isEmpty()) {
            return null;
        }
        long modified = version.get().modified().to(TimeUnit.NANOSECONDS);
        long sizeAndKey =
                (version.get().size() << 32) ^ Objects.hashCode(version.get().fileKey());
        if (!reread && before != null && before.modified() == modified && before.sizeAndKey() == sizeAndKey) {
            return new Looked(before, null);
        }
        StoredResource resource;
        if (!reread && hint != null && hint.version().equals(version.get())) {
            told++;
            resource = hint.resource();
        } else {
            Optional<StoredResource> read = backend.read(gatewayId, key);
            if (read.isEmpty()) {
                return null;
            }
            reads++;
            resource = read.get();
        }
        Optional<Seen> seen = toSeen.apply(resource);
        return new Looked(
                new Entry(modified, sizeAndKey, seen.map(s -> sandbox(key, s)).orElse(null)), seen.orElse(null));
    }

    /** What an entry keeps of {@code seen}: the key's own instance as the id, and shared values once. */
    private Sandbox sandbox(String key, Seen seen) {
        SandboxObservation o = seen.observation();
        return new Sandbox(
                o.ref().id().equals(key) ? key : o.ref().id(),
                interner.intern(o.ref().workspace()),
                o.ref().name(),
                o.generation(),
                o.state(),
                interner.intern(o.policyDigest()),
                interner.intern(o.labels()),
                interner.intern(o.detail()),
                seen.backendId().hashCode());
    }

    /** What the watch delivers for one record going from {@code before} to {@code after} (null: absent). */
    private static void compare(Entry before, Looked after, List<Seen> changed, List<SandboxObservation> removed) {
        Sandbox was = before == null ? null : before.sandbox();
        Sandbox is =
                after == null || after.entry() == null ? null : after.entry().sandbox();
        if (is != null) {
            if (!is.equals(was) && after.seen() != null) {
                changed.add(after.seen());
            }
        } else if (was != null) {
            removed.add(was.observation());
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
                var events = new ArrayList<SandboxEvent>();
                first(events::add);
                return events;
            }

            @Override
            public boolean first(Predicate<SandboxEvent> deliver) {
                return IncrementalScan.this.first(
                        (key, seen) -> deliver.test(new SandboxEvent.Snapshot(seen.observation())));
            }

            @Override
            public List<SandboxEvent> next() {
                Delta delta = IncrementalScan.this.next();
                return SnapshotDiff.events(
                        delta.changed().stream().map(Seen::observation).toList(), delta.removed());
            }
        };
    }
}
