package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

/**
 * A {@link SqlStore} with what a single writer may keep in memory: the last committed rows of recently used sandboxes
 * ({@link CommittedRows}), admitted policy revisions (which never change), and which request ids exist ({@link
 * RequestIds}). Sound only while no other process writes the database: the embedded store holds its data directory's
 * lock. A store shared by several gateways runs without it.
 */
final class CachingStore implements Store, WriteObserver {
    static final int MAX_REVISIONS = 20_000;

    private record RevisionKey(String sandboxId, long revision) {}

    private final SqlStore inner;
    private final RequestIds requestIds;
    private final CommittedRows committed = new CommittedRows();
    private final LongAdder lookUpsRead = new LongAdder();
    /** Admitted policy revisions, which never change: those committed or read lately, up to MAX_REVISIONS. */
    private final ConcurrentHashMap<RevisionKey, PolicyRevisionRecord> revisions = new ConcurrentHashMap<>();
    /**
     * The sandboxes the open write transaction has written (or tried to), kept by the writer: any other sandbox reads
     * in that transaction as last committed, so {@link #committed} answers for it.
     */
    private final Set<String> touched = new HashSet<>();

    /** Wraps {@code inner}, whose writes it observes from now on; {@code requestIds} is built and closed with it. */
    CachingStore(SqlStore inner, RequestIds requestIds) {
        this.inner = requireNonNull(inner, "inner is null");
        this.requestIds = requireNonNull(requestIds, "requestIds is null");
        inner.writes().observeWith(this);
    }

    @Override
    public <T> T write(Function<StoreTransaction, T> work) {
        return inner.write(work);
    }

    @Override
    public <T> T read(Function<StoreTransaction, T> work) {
        return inner.read(work);
    }

    /**
     * The sandbox as last committed, from memory when it is there ({@link CommittedRows}); otherwise read, and kept
     * for the next look-up.
     */
    @Override
    public Optional<SandboxRecord> sandbox(String id) {
        requireNonNull(id, "id is null");
        SandboxRecord known = committed.get(id);
        if (known != null) {
            return Optional.of(known);
        }
        if (committed.deleted(id)) {
            return Optional.empty();
        }
        lookUpsRead.increment();
        long before = committed.sequence();
        Optional<SandboxRecord> row = read(tx -> tx.sandbox(id));
        row.ifPresent(r -> committed.fill(before, r));
        return row;
    }

    /**
     * The runtime state as last committed, from the row in memory when it is there; otherwise read without the spec
     * and labels, and not kept (the reconciler looks at every sandbox once, which would only evict the rows in use).
     */
    @Override
    public Optional<RuntimeState> runtimeState(String id) {
        requireNonNull(id, "id is null");
        SandboxRecord known = committed.get(id);
        if (known != null) {
            return Optional.of(RuntimeState.of(known));
        }
        if (committed.deleted(id)) {
            return Optional.empty();
        }
        return read(tx -> tx.runtimeState(id));
    }

    /** The request with this id, outside any transaction; a new id is known absent without reading the database. */
    @Override
    public Optional<RequestRecord> request(String requestId) {
        requireNonNull(requestId, "requestId is null");
        if (!requestIds.mightHold(requestId)) {
            return Optional.empty();
        }
        return read(tx -> tx.request(requestId));
    }

    /** A committed policy revision, from memory when it is there; otherwise read, and kept (revisions never change). */
    @Override
    public Optional<PolicyRevisionRecord> policyRevision(String sandboxId, long revision) {
        requireNonNull(sandboxId, "sandboxId is null");
        PolicyRevisionRecord known = revisions.get(new RevisionKey(sandboxId, revision));
        if (known != null) {
            return Optional.of(known);
        }
        Optional<PolicyRevisionRecord> read = read(tx -> tx.policyRevision(sandboxId, revision));
        read.ifPresent(this::keepRevision);
        return read;
    }

    /** Keeps a revision that is committed: read from the database, or inserted by a commit that succeeded. */
    private void keepRevision(PolicyRevisionRecord r) {
        if (revisions.size() >= MAX_REVISIONS) {
            revisions.clear();
        }
        // As a read returns it: the admission time to the stored millisecond.
        revisions.put(
                new RevisionKey(r.sandboxId(), r.revision()),
                new PolicyRevisionRecord(
                        r.sandboxId(),
                        r.revision(),
                        r.digest(),
                        r.document(),
                        Instant.ofEpochMilli(r.admitTime().toEpochMilli())));
    }

    @Override
    public void beginTransaction() {
        requestIds.betweenTransactions();
        touched.clear();
    }

    @Override
    public Observed observe(SqlTransaction tx, List<CommittedRows.Change> changes) {
        return new CachingTransaction(tx, changes);
    }

    @Override
    public void committed(List<Observed> writes) {
        List<CommittedRows.Change> changes = changesOf(writes);
        committed.apply(changes);
        for (Observed write : writes) {
            ((CachingTransaction) write).revisionsAdded.forEach(this::keepRevision);
        }
    }

    @Override
    public void rolledBack(List<Observed> writes) {
        committed.forget(changesOf(writes));
    }

    private static List<CommittedRows.Change> changesOf(List<Observed> writes) {
        if (writes.size() == 1) {
            return ((CachingTransaction) writes.getFirst()).changes;
        }
        List<CommittedRows.Change> all = new ArrayList<>();
        writes.forEach(write -> all.addAll(((CachingTransaction) write).changes));
        return all;
    }

    /** How many look-ups by id outside a transaction read the database. */
    long lookUpsRead() {
        return lookUpsRead.sum();
    }

    /** How many sandboxes have their committed row kept in memory. */
    int committedRows() {
        return committed.size();
    }

    /** How many times the request-id filter was built from the table. */
    long requestIdRebuilds() {
        return requestIds.rebuilds();
    }

    @Override
    public void close() {
        requestIds.close();
        inner.close();
    }

    /**
     * A write transaction that reads a sandbox it has not written as last committed, which {@link CommittedRows} holds
     * for recently used sandboxes: the single writer is running this transaction, so no commit changes it meanwhile.
     */
    private final class CachingTransaction implements StoreTransaction, Observed {
        private final SqlTransaction tx;
        private final List<CommittedRows.Change> changes;
        private final List<PolicyRevisionRecord> revisionsAdded = new ArrayList<>();

        CachingTransaction(SqlTransaction tx, List<CommittedRows.Change> changes) {
            this.tx = tx;
            this.changes = changes;
        }

        @Override
        public StoreTransaction transaction() {
            return this;
        }

        @Override
        public Optional<SandboxRecord> sandbox(String id) {
            if (!touched.contains(id)) {
                SandboxRecord known = committed.get(id);
                if (known != null) {
                    return Optional.of(known);
                }
                if (committed.deleted(id)) {
                    return Optional.empty();
                }
            }
            return tx.sandbox(id);
        }

        @Override
        public Optional<SandboxRecord> sandboxByName(String workspace, String name) {
            return tx.sandboxByName(workspace, name);
        }

        @Override
        public SandboxRecord insertSandbox(SandboxRecord sandbox) {
            touched.add(sandbox.id());
            return tx.insertSandbox(sandbox);
        }

        @Override
        public SandboxRecord updateSandbox(SandboxRecord sandbox) {
            touched.add(sandbox.id());
            return tx.updateSandbox(sandbox);
        }

        @Override
        public void deleteSandbox(String id, long expectedVersion) {
            touched.add(id);
            tx.deleteSandbox(id, expectedVersion);
        }

        @Override
        public List<SandboxRecord> listSandboxes(SandboxFilter filter, Optional<SandboxKey> after, int limit) {
            return tx.listSandboxes(filter, after, limit);
        }

        @Override
        public Optional<RuntimeState> runtimeState(String id) {
            if (!touched.contains(id)) {
                SandboxRecord known = committed.get(id);
                if (known != null) {
                    return Optional.of(RuntimeState.of(known));
                }
                if (committed.deleted(id)) {
                    return Optional.empty();
                }
            }
            return tx.runtimeState(id);
        }

        @Override
        public List<RuntimeState> runtimeStates(Optional<SandboxKey> after, int limit) {
            return tx.runtimeStates(after, limit);
        }

        @Override
        public List<DueLease> leasesByDue(int limit) {
            return tx.leasesByDue(limit);
        }

        @Override
        public List<SandboxRecord> pendingSandboxes() {
            return tx.pendingSandboxes();
        }

        @Override
        public void insertPolicyRevision(PolicyRevisionRecord revision) {
            tx.insertPolicyRevision(revision);
            revisionsAdded.add(revision);
        }

        @Override
        public Optional<PolicyRevisionRecord> policyRevision(String sandboxId, long revision) {
            return tx.policyRevision(sandboxId, revision);
        }

        @Override
        public Optional<RequestRecord> request(String requestId) {
            return tx.request(requestId);
        }

        @Override
        public void insertRequest(RequestRecord request) {
            requestIds.adding(request.requestId());
            tx.insertRequest(request);
        }

        @Override
        public void completeRequest(String requestId, RequestResult result, Instant completeTime) {
            tx.completeRequest(requestId, result, completeTime);
        }

        @Override
        public void replaceRequestResult(String requestId, RequestResult result) {
            tx.replaceRequestResult(requestId, result);
        }

        @Override
        public int pruneRequests(Instant cutoff, int limit) {
            return tx.pruneRequests(cutoff, limit);
        }

        @Override
        public Optional<ReplicaLease> takeLease(String key, String owner, Duration ttl) {
            return tx.takeLease(key, owner, ttl);
        }

        @Override
        public boolean renewLease(ReplicaLease lease, Duration ttl) {
            return tx.renewLease(lease, ttl);
        }

        @Override
        public boolean holdsLease(ReplicaLease lease) {
            return tx.holdsLease(lease);
        }

        @Override
        public void releaseLease(ReplicaLease lease) {
            tx.releaseLease(lease);
        }

        @Override
        public Optional<String> meta(String key) {
            return tx.meta(key);
        }

        @Override
        public void putMeta(String key, String value) {
            tx.putMeta(key, value);
        }
    }
}
