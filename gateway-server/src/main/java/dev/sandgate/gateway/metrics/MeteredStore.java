package dev.sandgate.gateway.metrics;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.store.PolicyRevisionRecord;
import dev.sandgate.gateway.store.RequestRecord;
import dev.sandgate.gateway.store.RuntimeState;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.gateway.store.StoreTransaction;
import java.util.Optional;
import java.util.function.Function;

/** Times every write transaction of a {@link Store}, from the call to its commit (waiting for the writer included). */
public final class MeteredStore implements Store {
    private final Store store;
    private final GatewayObserver observer;

    public MeteredStore(Store store, GatewayObserver observer) {
        this.store = requireNonNull(store, "store is null");
        this.observer = requireNonNull(observer, "observer is null");
    }

    @Override
    public <T> T write(Function<StoreTransaction, T> work) {
        long started = System.nanoTime();
        boolean committed = false;
        try {
            T result = store.write(work);
            committed = true;
            return result;
        } finally {
            observer.storeCommit(committed, System.nanoTime() - started);
        }
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
}
