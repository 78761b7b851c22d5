package dev.sandgate.gateway.store;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The spec and labels of each sandbox as last decoded from their JSON columns. Both are written once, when the sandbox
 * is inserted, and never updated, yet every read of a sandbox (several per lifecycle call) returns them: decoding them
 * again each time was a measurable share of the gateway's work. An entry is used only if the stored JSON texts are
 * exactly the texts it was decoded from, so what a read returns is always what is stored. Shared by the store's
 * connections; bounded by dropping every entry when there are {@link #MAX_ENTRIES}.
 */
final class DecodedColumns {
    static final int MAX_ENTRIES = 50_000;

    /** Decoded values are immutable, so every read may share them. */
    record Decoded(String specJson, StoredSpec spec, String labelsJson, Map<String, String> labels) {}

    private final ConcurrentHashMap<String, Decoded> entries = new ConcurrentHashMap<>();

    Decoded decode(String sandboxId, String specJson, String labelsJson) {
        Decoded known = entries.get(sandboxId);
        if (known != null
                && known.specJson().equals(specJson)
                && known.labelsJson().equals(labelsJson)) {
            return known;
        }
        Decoded fresh =
                new Decoded(specJson, StoreJson.spec(specJson), labelsJson, Map.copyOf(StoreJson.labels(labelsJson)));
        if (entries.size() >= MAX_ENTRIES) {
            entries.clear();
        }
        entries.put(sandboxId, fresh);
        return fresh;
    }

    void forget(String sandboxId) {
        entries.remove(sandboxId);
    }

    int size() {
        return entries.size();
    }
}
