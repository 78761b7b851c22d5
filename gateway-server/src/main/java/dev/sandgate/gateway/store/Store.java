package dev.sandgate.gateway.store;

import java.util.Optional;
import java.util.function.Function;

/**
 * The gateway's persistent state. The lifecycle code sees only this interface and {@link StoreTransaction}; all SQL
 * lives in the implementation, so that another store (PostgreSQL for several gateway replicas) can follow without
 * touching the lifecycle.
 *
 * <p>Threading: both methods may be called from any thread. Writes are serialized; a {@link #write} transaction is
 * atomic and isolated (what it reads cannot change before it commits).
 */
public interface Store extends AutoCloseable {
    /**
     * Runs {@code work} in one read-write transaction and commits it. If {@code work} throws, nothing is written and
     * the exception propagates.
     */
    <T> T write(Function<StoreTransaction, T> work);

    /** Runs {@code work} against a consistent snapshot, without writing. */
    <T> T read(Function<StoreTransaction, T> work);

    /**
     * The sandbox with this id as last committed, outside any transaction: never older than what the last {@link
     * #write} that returned before this call committed. A store may answer from memory.
     */
    default Optional<SandboxRecord> sandbox(String id) {
        return read(tx -> tx.sandbox(id));
    }

    /**
     * The {@link RuntimeState} of the sandbox with this id as last committed, outside any transaction, with the same
     * guarantee as {@link #sandbox}; a store may answer from memory, and otherwise reads no spec or labels.
     */
    default Optional<RuntimeState> runtimeState(String id) {
        return read(tx -> tx.runtimeState(id));
    }

    /**
     * The request with this request id, outside any transaction: present if a {@link #write} that recorded it returned
     * before this call. A store may answer "absent" without reading.
     */
    default Optional<RequestRecord> request(String requestId) {
        return read(tx -> tx.request(requestId));
    }

    /**
     * An admitted policy revision, outside any transaction: present if a {@link #write} that admitted it returned
     * before this call. Revisions never change once admitted, so a store may answer from memory.
     */
    default Optional<PolicyRevisionRecord> policyRevision(String sandboxId, long revision) {
        return read(tx -> tx.policyRevision(sandboxId, revision));
    }

    @Override
    void close();
}
