package dev.sandgate.gateway.lifecycle;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fans committed sandbox changes out to in-process listeners (watch streams, wait-until-ready, the expiry loop).
 * Listeners must return quickly: they are called on the thread that committed the change, or on the {@link
 * ChangeFollower}'s.
 *
 * <p>A gateway alone on its database (SQLite) publishes each change here after its commit. Replicas that share a
 * database (PostgreSQL) get every change to a stored sandbox, their own included, from the database's change log
 * instead ({@link ChangeFollower}), so that each replica streams them once and in commit order: once the hub {@link
 * #followsLog() follows the log}, what the lifecycle publishes here with {@code stateChanged} is left to the log, and
 * only the changes that store nothing (platform events, observations of older executions) are delivered at once.
 */
public final class WatchHub {
    private static final Logger log = LoggerFactory.getLogger(WatchHub.class);

    private final CopyOnWriteArrayList<Consumer<SandboxChange>> listeners = new CopyOnWriteArrayList<>();
    private final CopyOnWriteArrayList<Runnable> missedListeners = new CopyOnWriteArrayList<>();
    private volatile boolean followsLog;

    /** A registered listener; closing it unregisters it. */
    public interface Registration extends AutoCloseable {
        @Override
        void close();
    }

    public Registration register(Consumer<SandboxChange> listener) {
        listeners.add(listener);
        return () -> listeners.remove(listener);
    }

    /**
     * Registers {@code listener} to be told when changes may have been missed (the replica's follower fell behind the
     * change log's pruning, or lost its connection and cannot tell what it missed): whoever streams changes must make
     * its clients start over from a snapshot.
     */
    public Registration onMissed(Runnable listener) {
        missedListeners.add(listener);
        return () -> missedListeners.remove(listener);
    }

    /** Whether the changes to stored sandboxes come from the change log ({@link ChangeFollower}). */
    public boolean followsLog() {
        return followsLog;
    }

    /** From now on, stored changes come from the change log only. */
    void followLog() {
        followsLog = true;
    }

    /** A change the lifecycle committed (or a change that stores nothing); see the class comment. */
    void publish(SandboxChange change) {
        if (followsLog && change.stateChanged()) {
            return;
        }
        deliver(change);
    }

    /** Delivers {@code change} to every listener (the follower's changes, read from the log). */
    void deliver(SandboxChange change) {
        for (Consumer<SandboxChange> listener : listeners) {
            try {
                listener.accept(change);
            } catch (RuntimeException e) {
                log.warn("a watch listener failed; it keeps its registration", e);
            }
        }
    }

    /** Tells every {@link #onMissed} listener that changes may have been missed. */
    void missed() {
        for (Runnable listener : missedListeners) {
            try {
                listener.run();
            } catch (RuntimeException e) {
                log.warn("a watch listener failed on missed changes", e);
            }
        }
    }

    int listenerCount() {
        return listeners.size();
    }
}
