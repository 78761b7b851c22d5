package dev.sandgate.gateway.store;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The last committed row of recently used sandboxes, so that a look-up by id outside a transaction ({@link
 * Store#sandbox}) needs no read of the database. In WAL mode a reading connection drops its page cache whenever
 * another connection committed, so under load each such read went back to the file for every B-tree page it needed.
 *
 * <p>An entry is always exactly what a read of the database would return at some moment no earlier than the last
 * commit that returned to its caller:
 *
 * <ul>
 *   <li>the writer applies the changes of a commit ({@link #apply}) after the commit and before any of its callers
 *       returns, in commit order, one writer at a time; a change it cannot apply exactly (an update of a row it does
 *       not hold at the version written over) removes the entry instead;
 *   <li>a reader adds a row it read from the database ({@link #fill}) only if no application began since it looked at
 *       {@link #sequence} before its read; an application that began since removes or overwrites the row;
 *   <li>removing an entry is always safe: a miss reads the database.
 * </ul>
 *
 * <p>It also knows the ids whose rows a commit deleted ({@link #deleted}): a read finds none of them, as the gateway
 * never gives a new sandbox an id used before (an insert with such an id takes it out of that set first, all the same).
 * The driver reports every deleted resource, and the gateway looks the sandbox up for each report: at 2,000 deletes a
 * second, without this set, 2,000 reads of the database in a burst each time a driver's watch polls.
 *
 * <p>The gateway holds its data directory's lock, so no other process writes the database. Bounded by dropping every
 * entry (and every deleted id) when there are {@link #MAX_ENTRIES}.
 */
final class CommittedRows {
    static final int MAX_ENTRIES = 20_000;

    /** One change of a committed write transaction, recorded by the transaction as it writes. */
    sealed interface Change {
        String id();
    }

    /** A row inserted, as a read returns it. */
    record Inserted(SandboxRecord row) implements Change {
        @Override
        public String id() {
            return row.id();
        }
    }

    /**
     * A row updated over {@code fromVersion}: {@code written} as the caller passed it, {@code conditions} as a read
     * decodes them; the columns an update does not write are taken from the entry being updated.
     */
    record Updated(SandboxRecord written, long fromVersion, List<ConditionRecord> conditions) implements Change {
        @Override
        public String id() {
            return written.id();
        }
    }

    record Deleted(String id) implements Change {}

    private final ConcurrentHashMap<String, SandboxRecord> entries = new ConcurrentHashMap<>();
    /** Ids whose rows a commit deleted; changed by the writer only. */
    private final Set<String> deleted = ConcurrentHashMap.newKeySet();
    /** Odd while the writer applies changes; only the writer changes it. */
    private final AtomicLong sequence = new AtomicLong();

    SandboxRecord get(String id) {
        return entries.get(id);
    }

    /** Whether a commit deleted the row of {@code id}: a read would find none (checked after {@link #get}). */
    boolean deleted(String id) {
        return deleted.contains(id);
    }

    /** Read before reading a row that is then offered to {@link #fill}. */
    long sequence() {
        return sequence.get();
    }

    /** Offers a row read from the database by a transaction that began after {@code before} was read. */
    void fill(long before, SandboxRecord row) {
        if ((before & 1) != 0 || entries.size() >= MAX_ENTRIES) {
            return;
        }
        if (entries.putIfAbsent(row.id(), row) == null && sequence.get() != before) {
            // A commit's changes began to be applied meanwhile: the row may be older than one of them.
            entries.remove(row.id(), row);
        }
    }

    /** Applies the changes of one commit, in order. Called by the writer only, after the commit. */
    void apply(List<Change> changes) {
        if (changes.isEmpty()) {
            return;
        }
        sequence.incrementAndGet();
        try {
            for (Change change : changes) {
                switch (change) {
                    case Inserted i -> {
                        deleted.remove(i.id());
                        put(i.row());
                    }
                    case Updated u -> {
                        SandboxRecord before = entries.get(u.id());
                        if (before != null && before.resourceVersion() == u.fromVersion()) {
                            put(afterUpdate(before, u));
                        } else {
                            entries.remove(u.id());
                        }
                    }
                    case Deleted d -> {
                        entries.remove(d.id());
                        if (deleted.size() >= MAX_ENTRIES) {
                            deleted.clear();
                        }
                        deleted.add(d.id());
                    }
                }
            }
        } finally {
            sequence.incrementAndGet();
        }
    }

    /** Forgets the rows of changes that were not committed after all. Called by the writer only. */
    void forget(List<Change> changes) {
        sequence.incrementAndGet();
        try {
            changes.forEach(change -> {
                entries.remove(change.id());
                deleted.remove(change.id());
            });
        } finally {
            sequence.incrementAndGet();
        }
    }

    int size() {
        return entries.size();
    }

    private void put(SandboxRecord row) {
        if (entries.size() >= MAX_ENTRIES && !entries.containsKey(row.id())) {
            entries.clear();
        }
        entries.put(row.id(), row);
    }

    /** The row a read returns after {@code u}: the columns an update writes, at the precision they are stored. */
    private static SandboxRecord afterUpdate(SandboxRecord before, Updated u) {
        SandboxRecord s = u.written();
        return new SandboxRecord(
                before.id(),
                before.workspace(),
                before.name(),
                s.phase(),
                s.generation(),
                millis(s.generationStart()),
                s.launchRevision(),
                s.launchDigest(),
                s.runtimeGeneration(),
                s.runtimeState(),
                s.runtimeDetail(),
                before.policyMode(),
                s.admittedRevision(),
                s.admittedDigest(),
                before.spec(),
                before.labels(),
                u.conditions(),
                stored(s.pending()),
                u.fromVersion() + 1,
                before.createTime(),
                millis(s.updateTime()),
                before.expiry(),
                s.lease());
    }

    /** An inserted row as a read returns it; {@code decoded} and {@code conditions} as a read decodes them. */
    static SandboxRecord inserted(SandboxRecord s, DecodedColumns.Decoded decoded, List<ConditionRecord> conditions) {
        return new SandboxRecord(
                s.id(),
                s.workspace(),
                s.name(),
                s.phase(),
                s.generation(),
                millis(s.generationStart()),
                s.launchRevision(),
                s.launchDigest(),
                s.runtimeGeneration(),
                s.runtimeState(),
                s.runtimeDetail(),
                s.policyMode(),
                s.admittedRevision(),
                s.admittedDigest(),
                decoded.spec(),
                decoded.labels(),
                conditions,
                stored(s.pending()),
                1,
                millis(s.createTime()),
                millis(s.updateTime()),
                s.expiry(),
                s.lease());
    }

    private static Optional<PendingTransition> stored(Optional<PendingTransition> pending) {
        return pending.map(p -> new PendingTransition(
                p.kind(), p.operationId(), p.requestId(), p.expectedGeneration(), millis(p.since())));
    }

    private static Instant millis(Instant instant) {
        return Instant.ofEpochMilli(instant.toEpochMilli());
    }
}
