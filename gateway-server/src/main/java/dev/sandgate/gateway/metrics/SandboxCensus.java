package dev.sandgate.gateway.metrics;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.store.SandboxFilter;
import dev.sandgate.gateway.store.SandboxPhase;
import dev.sandgate.gateway.store.SandboxRecord;
import dev.sandgate.gateway.store.Store;
import dev.sandgate.gateway.store.StoreTransaction.SandboxKey;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Sandboxes by phase and transitions pending, counted from the store by pages at most once per {@link #maxAgeNanos}
 * (a scrape asks for every gauge in turn: one count serves them all).
 */
final class SandboxCensus {
    private static final int PAGE = 500;

    private final Store store;
    private final long maxAgeNanos;
    private Map<SandboxPhase, Long> phases = new EnumMap<>(SandboxPhase.class);
    private long pending;
    private long countedAt;
    private boolean counted;

    SandboxCensus(Store store, long maxAgeNanos) {
        this.store = requireNonNull(store, "store is null");
        this.maxAgeNanos = maxAgeNanos;
    }

    synchronized long phase(SandboxPhase phase) {
        refresh();
        return phases.getOrDefault(phase, 0L);
    }

    synchronized long pending() {
        refresh();
        return pending;
    }

    private void refresh() {
        long now = System.nanoTime();
        if (counted && now - countedAt < maxAgeNanos) {
            return;
        }
        Map<SandboxPhase, Long> byPhase = new EnumMap<>(SandboxPhase.class);
        long withPending = 0;
        Optional<SandboxKey> after = Optional.empty();
        while (true) {
            Optional<SandboxKey> from = after;
            List<SandboxRecord> page = store.read(tx -> tx.listSandboxes(SandboxFilter.ALL, from, PAGE));
            for (SandboxRecord row : page) {
                byPhase.merge(row.phase(), 1L, Long::sum);
                if (row.pending().isPresent()) {
                    withPending++;
                }
            }
            if (page.size() < PAGE) {
                break;
            }
            SandboxRecord last = page.getLast();
            after = Optional.of(new SandboxKey(last.workspace(), last.name()));
        }
        phases = byPhase;
        pending = withPending;
        countedAt = now;
        counted = true;
    }
}
