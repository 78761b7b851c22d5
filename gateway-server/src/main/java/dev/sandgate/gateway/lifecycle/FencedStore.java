package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.store.DueLease;
import dev.sandgate.gateway.store.PolicyRevisionRecord;
import dev.sandgate.gateway.store.ReplicaLease;
import dev.sandgate.gateway.store.RequestRecord;
import dev.sandgate.gateway.store.RequestResult;
import dev.sandgate.gateway.store.RuntimeState;
import dev.sandgate.gateway.store.SandboxFilter;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.gateway.store.StoreTransaction;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * A store whose sandbox writes are fenced by the replica's sandbox leases ({@link ReplicaCoordination}): an update or
 * delete of a sandbox whose lease this replica holds first checks, in the same transaction, that the lease was not taken
 * over (locking its row, so that no take-over comes before the commit). One taken over is refused with SANDBOX_BUSY and
 * the transaction writes nothing: the replica that took the lease over finishes the sandbox's pending transition.
 * Writes of a sandbox whose lease this replica does not hold (driver events) are compare-and-set on the resource
 * version, as ever.
 */
final class FencedStore implements Store {
    private final Store store;
    private final ReplicaCoordination coordination;

    FencedStore(Store store, ReplicaCoordination coordination) {
        this.store = requireNonNull(store, "store is null");
        this.coordination = requireNonNull(coordination, "coordination is null");
    }

    @Override
    public <T> T write(Function<StoreTransaction, T> work) {
        return store.write(tx -> work.apply(new Fenced(tx)));
    }

    @Override
    public <T> T read(Function<StoreTransaction, T> work) {
        return store.read(work);
    }

    @Override
    public Optional<SandboxRecord> sandbox(String id) {
        return store.sandbox(id);
    }

    @Override
    public Optional<RuntimeState> runtimeState(String id) {
        return store.runtimeState(id);
    }

    @Override
    public Optional<RequestRecord> request(String requestId) {
        return store.request(requestId);
    }

    @Override
    public Optional<PolicyRevisionRecord> policyRevision(String sandboxId, long revision) {
        return store.policyRevision(sandboxId, revision);
    }

    @Override
    public void close() {
        store.close();
    }

    private final class Fenced implements StoreTransaction {
        private final StoreTransaction tx;

        Fenced(StoreTransaction tx) {
            this.tx = tx;
        }

        private void requireLease(String sandboxId) {
            Optional<ReplicaLease> held = coordination.heldLease(sandboxId);
            if (held.isPresent() && !tx.holdsLease(held.get())) {
                throw new GatewayException(
                        ErrorReason.SANDBOX_BUSY,
                        "sandbox " + sandboxId + " was taken over by another gateway replica (this one's lease, epoch "
                                + held.get().epoch() + ", expired): that replica finishes its operation");
            }
        }

        @Override
        public Optional<SandboxRecord> sandbox(String id) {
            return tx.sandbox(id);
        }

        @Override
        public Optional<SandboxRecord> sandboxByName(String workspace, String name) {
            return tx.sandboxByName(workspace, name);
        }

        @Override
        public SandboxRecord insertSandbox(SandboxRecord sandbox) {
            return tx.insertSandbox(sandbox);
        }

        @Override
        public SandboxRecord updateSandbox(SandboxRecord sandbox) {
            requireLease(sandbox.id());
            return tx.updateSandbox(sandbox);
        }

        @Override
        public void deleteSandbox(String id, long expectedVersion) {
            requireLease(id);
            tx.deleteSandbox(id, expectedVersion);
        }

        @Override
        public List<SandboxRecord> listSandboxes(SandboxFilter filter, Optional<SandboxKey> after, int limit) {
            return tx.listSandboxes(filter, after, limit);
        }

        @Override
        public Optional<RuntimeState> runtimeState(String id) {
            return tx.runtimeState(id);
        }

        @Override
        public List<RuntimeState> runtimeStates(Optional<SandboxKey> after, int limit) {
            return tx.runtimeStates(after, limit);
        }

        @Override
        public List<SandboxRecord> pendingSandboxes() {
            return tx.pendingSandboxes();
        }

        @Override
        public List<DueLease> leasesByDue(int limit) {
            return tx.leasesByDue(limit);
        }

        @Override
        public void insertPolicyRevision(PolicyRevisionRecord revision) {
            tx.insertPolicyRevision(revision);
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
