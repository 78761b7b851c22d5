package dev.sandgate.driver.reference;

import static java.util.Objects.requireNonNull;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The scans of one watch subscription: each scan lists the gateway's folder and rereads only the records whose {@link
 * DirectoryBackend.Version} changed since the previous scan; every {@code fullEvery}-th scan rereads every record, so
 * that a change the version cannot tell apart is still seen. One stat per sandbox instead of parsing its files keeps a
 * watch over thousands of stored sandboxes cheap.
 *
 * <p>The version is taken before the record is read: a record that changes in between is read as new and kept under the
 * older version, so the next scan reads it again rather than missing the change. Not thread-safe: one subscription
 * thread calls it.
 */
final class IncrementalScan implements Supplier<Map<String, DirectoryWatch.Seen>> {
    /** One record as the last scan left it: its file, its version and what the driver made of it. */
    private record Entry(Path file, DirectoryBackend.Version version, Optional<DirectoryWatch.Seen> seen) {}

    private final DirectoryBackend backend;
    private final String gatewayId;
    private final Function<StoredResource, Optional<DirectoryWatch.Seen>> toSeen;
    private final int fullEvery;
    private Map<String, Entry> known = new HashMap<>();
    private long scans;
    private long reads;

    /**
     * @param toSeen what the driver makes of a record: empty for a resource that is not one of its sandboxes
     * @param fullEvery every how many scans every record is reread (1: every scan)
     */
    IncrementalScan(
            DirectoryBackend backend,
            String gatewayId,
            Function<StoredResource, Optional<DirectoryWatch.Seen>> toSeen,
            int fullEvery) {
        this.backend = requireNonNull(backend, "backend is null");
        this.gatewayId = requireNonNull(gatewayId, "gatewayId is null");
        this.toSeen = requireNonNull(toSeen, "toSeen is null");
        if (fullEvery < 1) {
            throw new IllegalArgumentException("fullEvery must be at least 1");
        }
        this.fullEvery = fullEvery;
    }

    @Override
    public Map<String, DirectoryWatch.Seen> get() {
        boolean full = scans++ % fullEvery == 0;
        var next = new HashMap<String, Entry>(Math.max(16, known.size() * 4 / 3 + 1));
        var seen = new HashMap<String, DirectoryWatch.Seen>();
        for (String key : backend.keys(gatewayId)) {
            Entry entry = known.get(key);
            Path file = entry != null ? entry.file() : backend.recordFile(gatewayId, key);
            Optional<DirectoryBackend.Version> version = DirectoryBackend.version(file);
            if (version.isEmpty()) {
                continue; // removed while listing
            }
            // An unchanged record keeps its entry, so its Seen is the very object the previous scan returned.
            if (full || entry == null || !entry.version().equals(version.get())) {
                Optional<StoredResource> resource = backend.read(gatewayId, key);
                if (resource.isEmpty()) {
                    continue;
                }
                reads++;
                entry = new Entry(file, version.get(), toSeen.apply(resource.get()));
            }
            next.put(key, entry);
            entry.seen().ifPresent(s -> seen.put(key, s));
        }
        known = next;
        return seen;
    }

    /** How many records the scans have read so far (for tests). */
    long reads() {
        return reads;
    }
}
