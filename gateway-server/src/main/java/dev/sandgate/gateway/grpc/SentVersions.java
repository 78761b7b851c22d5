package dev.sandgate.gateway.grpc;

import dev.sandgate.gateway.lifecycle.SandboxChange;
import dev.sandgate.gateway.store.SandboxRecord;
import java.util.HashMap;
import java.util.Map;

/**
 * What one watch stream sent of each sandbox (its resource version), so that the stream never goes back: a change the
 * snapshot or a later change already covered is dropped, and so is an event that changes nothing (an observation of an
 * older execution, a platform event) but carries the sandbox as it was before a version the stream sent. Such events
 * are published by other threads than the changes (and on PostgreSQL come from another path than the change log), so
 * they can arrive after a newer state. Not thread-safe: a stream's turns run one at a time.
 */
final class SentVersions {
    private final Map<String, Long> sent = new HashMap<>();

    /** The snapshot sent this sandbox. */
    void snapshot(SandboxRecord sandbox) {
        sent.put(sandbox.id(), sandbox.resourceVersion());
    }

    /** Whether to send {@code change}; records its version if it is sent. */
    boolean admit(SandboxChange change) {
        String id = change.sandbox().id();
        long version = change.sandbox().resourceVersion();
        Long last = sent.get(id);
        if (change.type() == SandboxChange.Type.REMOVED) {
            sent.remove(id);
            return true;
        }
        if (!change.stateChanged()) {
            return last == null || version >= last;
        }
        if (last != null && version <= last) {
            return false;
        }
        sent.put(id, version);
        return true;
    }
}
