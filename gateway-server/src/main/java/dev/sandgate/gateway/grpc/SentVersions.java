package dev.sandgate.gateway.grpc;

import dev.sandgate.gateway.lifecycle.SandboxChange;
import dev.sandgate.gateway.store.SandboxRecord;
import java.util.HashMap;
import java.util.Map;

/**
 * What one watch stream sent of each sandbox, so that the stream never goes back and sends each change once. Events
 * that change nothing stored (an observation of an older execution, a platform event) carry the sandbox as their
 * publisher read it, and come from other threads than the changes (on PostgreSQL from another path than the change
 * log), so they can be newer or older than the last change the stream sent. Two versions per sandbox:
 *
 * <ul>
 *   <li>shown: the newest resource version any event sent showed; no event older than it is sent;
 *   <li>changed: the newest change (or snapshot) sent; a change at or below it is sent already.
 * </ul>
 *
 * Not thread-safe: a stream's turns run one at a time.
 */
final class SentVersions {
    /** Per sandbox id: {shown, changed}. */
    private final Map<String, long[]> sent = new HashMap<>();

    /** The snapshot sent this sandbox. */
    void snapshot(SandboxRecord sandbox) {
        sent.put(sandbox.id(), new long[] {sandbox.resourceVersion(), sandbox.resourceVersion()});
    }

    /** Whether to send {@code change}; records it if it is sent. */
    boolean admit(SandboxChange change) {
        String id = change.sandbox().id();
        if (change.type() == SandboxChange.Type.REMOVED) {
            sent.remove(id);
            return true;
        }
        long version = change.sandbox().resourceVersion();
        long[] last = sent.get(id);
        if (last == null) {
            last = new long[] {0, 0};
            sent.put(id, last);
        }
        if (version < last[0]) {
            return false;
        }
        if (change.stateChanged()) {
            if (version <= last[1]) {
                return false;
            }
            last[1] = version;
        }
        last[0] = version;
        return true;
    }
}
