package dev.sandgate.gateway.lifecycle;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fans committed sandbox changes out to in-process listeners (watch streams, wait-until-ready). Listeners must return
 * quickly: they are called on the thread that committed the change.
 */
public final class WatchHub {
    private static final Logger log = LoggerFactory.getLogger(WatchHub.class);

    private final CopyOnWriteArrayList<Consumer<SandboxChange>> listeners = new CopyOnWriteArrayList<>();

    /** A registered listener; closing it unregisters it. */
    public interface Registration extends AutoCloseable {
        @Override
        void close();
    }

    public Registration register(Consumer<SandboxChange> listener) {
        listeners.add(listener);
        return () -> listeners.remove(listener);
    }

    void publish(SandboxChange change) {
        for (Consumer<SandboxChange> listener : listeners) {
            try {
                listener.accept(change);
            } catch (RuntimeException e) {
                log.warn("a watch listener failed; it keeps its registration", e);
            }
        }
    }

    int listenerCount() {
        return listeners.size();
    }
}
