package dev.sandgate.gateway.store;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/** What a transaction can do. Methods that write throw if called in a read-only transaction. */
public interface StoreTransaction {
    Optional<SandboxRecord> sandbox(String id);

    Optional<SandboxRecord> sandboxByName(String workspace, String name);

    /** Inserts a new sandbox (resource version 1). Throws {@link NameTakenException} if the name is taken. */
    SandboxRecord insertSandbox(SandboxRecord sandbox);

    /**
     * Writes {@code sandbox} if the stored resource version is still {@code sandbox.resourceVersion()}, and returns it
     * with the next version. Otherwise throws {@link StaleRecordException} and writes nothing. Labels are fixed at
     * insert and not rewritten.
     */
    SandboxRecord updateSandbox(SandboxRecord sandbox);

    /** Removes the sandbox, its labels and policy revisions, if its version is still {@code expectedVersion}. */
    void deleteSandbox(String id, long expectedVersion);

    /** Sandboxes matching {@code filter} after (workspace, name) in that order, at most {@code limit}. */
    List<SandboxRecord> listSandboxes(SandboxFilter filter, Optional<SandboxKey> after, int limit);

    /** The {@link RuntimeState} of the sandbox with this id, without reading its spec and labels. */
    Optional<RuntimeState> runtimeState(String id);

    /**
     * The {@link RuntimeState}s of every sandbox after (workspace, name) in that order, at most {@code limit}: the
     * reconciler's pages, which read none of the spec and labels.
     */
    List<RuntimeState> runtimeStates(Optional<SandboxKey> after, int limit);

    /** Every sandbox with a pending transition. */
    List<SandboxRecord> pendingSandboxes();

    /**
     * The armed leases with the earliest due times, at most {@code limit}, earliest first: read by an index on the due
     * time, so the cost does not grow with the number of sandboxes.
     */
    List<DueLease> leasesByDue(int limit);

    void insertPolicyRevision(PolicyRevisionRecord revision);

    Optional<PolicyRevisionRecord> policyRevision(String sandboxId, long revision);

    Optional<RequestRecord> request(String requestId);

    void insertRequest(RequestRecord request);

    /** Records the result of a request admitted earlier (its record must exist and not be done). */
    void completeRequest(String requestId, RequestResult result, Instant completeTime);

    /**
     * Replaces the result of a finished request with {@code result}: the same outcome with the answer it finally gave
     * (after waiting for readiness). Its completion time stays.
     */
    void replaceRequestResult(String requestId, RequestResult result);

    /**
     * Removes up to {@code limit} request records, oldest first: those finished before {@code cutoff}, and those of
     * execs admitted before it that never got a result; returns how many. Fewer than {@code limit} means none is left
     * to remove.
     */
    int pruneRequests(Instant cutoff, int limit);

    /**
     * Takes the lease on {@code key} for {@code owner} for {@code ttl}, on the database's clock: if nobody holds it, or
     * its holder (this owner too) let it expire or released it. The epoch is one more than the lease's last, 1 for a
     * new key. Empty if it is held and not expired.
     */
    Optional<ReplicaLease> takeLease(String key, String owner, Duration ttl);

    /**
     * Extends {@code lease} to {@code ttl} from now, if it was not taken over since (an expired lease that nobody took
     * is still its holder's). Returns whether it was.
     */
    boolean renewLease(ReplicaLease lease, Duration ttl);

    /**
     * Whether {@code lease} is still its holder's: no take-over since. On PostgreSQL the lease's row stays locked until
     * this transaction ends, so no take-over can come between this answer and the commit.
     */
    boolean holdsLease(ReplicaLease lease);

    /** Gives {@code lease} up, if it is still its holder's, for anyone to take at once. */
    void releaseLease(ReplicaLease lease);

    Optional<String> meta(String key);

    void putMeta(String key, String value);

    /** The sort key of sandboxes in lists: workspace, then name. */
    record SandboxKey(String workspace, String name) {}
}
