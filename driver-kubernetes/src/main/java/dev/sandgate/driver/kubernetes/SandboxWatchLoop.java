package dev.sandgate.driver.kubernetes;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.WatchSubscription;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One {@link dev.sandgate.spi.ComputeDriver#watch} subscription: list, then watch from the list's resourceVersion.
 * When the watch ends abnormally (the API server dropped it and fabric8 gave up reconnecting, or the
 * resourceVersion expired with 410 Gone) it lists again and resyncs: a snapshot of every sandbox, a {@link
 * SandboxEvent.Deleted} for each one it knew that is gone, then {@link SandboxEvent.Synced}, then watches again.
 *
 * <p>All events are handled on one thread, in order, so the watcher is called from one thread at a time. A snapshot
 * is delivered only when the observation changed since the last one delivered for that sandbox (a watch that starts
 * by replaying every object delivers nothing new); a resync delivers every snapshot.
 */
final class SandboxWatchLoop implements WatchSubscription {
    private static final Logger log = LoggerFactory.getLogger(SandboxWatchLoop.class);
    private static final AtomicInteger THREADS = new AtomicInteger();

    /** Where the loop reads from: the driver's list and watch of its own Sandboxes. */
    interface Source {
        Listing list();

        Watch watch(String resourceVersion, Watcher<GenericKubernetesResource> watcher);
    }

    /** A list result: the items and the collection's resourceVersion to watch from. */
    record Listing(List<GenericKubernetesResource> items, String resourceVersion) {
        Listing {
            items = List.copyOf(requireNonNull(items, "items is null"));
            requireNonNull(resourceVersion, "resourceVersion is null");
        }
    }

    private final Source source;
    private final Function<GenericKubernetesResource, Optional<SandboxObservation>> observer;
    private final SandboxWatcher watcher;
    private final Duration reconnectBudget;
    private final ScheduledExecutorService events;

    // Touched only on the events thread.
    private final Map<String, SandboxObservation> known = new HashMap<>();
    private Watch watch;
    private long reconnectStartedNanos;
    private int reconnectAttempts;

    private volatile boolean closed;
    private volatile Thread eventThread;

    SandboxWatchLoop(
            Source source,
            Function<GenericKubernetesResource, Optional<SandboxObservation>> observer,
            SandboxWatcher watcher,
            Duration reconnectBudget) {
        this.source = requireNonNull(source, "source is null");
        this.observer = requireNonNull(observer, "observer is null");
        this.watcher = requireNonNull(watcher, "watcher is null");
        this.reconnectBudget = requireNonNull(reconnectBudget, "reconnectBudget is null");
        this.events = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "sandgate-kubernetes-watch-" + THREADS.incrementAndGet());
            thread.setDaemon(true);
            eventThread = thread;
            return thread;
        });
    }

    /** Lists, delivers the snapshots and {@link SandboxEvent.Synced}, and starts watching; returns when done. */
    void start() {
        Future<?> initial = events.submit(this::resync);
        try {
            initial.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            close();
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "interrupted while starting the watch", e);
        } catch (ExecutionException e) {
            close();
            if (e.getCause() instanceof DriverException driverException) {
                throw driverException;
            }
            throw new DriverException(DriverErrorCode.INTERNAL, "the watch failed to start", e.getCause());
        }
    }

    private void resync() {
        Listing listing = KubernetesErrors.call("list sandboxes for a watch", source::list);
        if (closed) {
            return;
        }
        Set<String> present = new HashSet<>();
        for (GenericKubernetesResource item : listing.items()) {
            Optional<SandboxObservation> observation = observer.apply(item);
            if (observation.isPresent()) {
                String id = observation.get().ref().id();
                present.add(id);
                known.put(id, observation.get());
                deliver(new SandboxEvent.Snapshot(observation.get()));
            }
        }
        for (var gone : Map.copyOf(known).entrySet()) {
            if (!present.contains(gone.getKey())) {
                known.remove(gone.getKey());
                deliver(new SandboxEvent.Deleted(
                        gone.getValue().ref(), gone.getValue().generation()));
            }
        }
        deliver(new SandboxEvent.Synced());
        watch = KubernetesErrors.call(
                "watch sandboxes", () -> source.watch(listing.resourceVersion(), new Forwarder()));
        reconnectAttempts = 0;
    }

    private void onEvent(Watcher.Action action, GenericKubernetesResource object) {
        if (closed) {
            return;
        }
        switch (action) {
            case ADDED, MODIFIED ->
                observer.apply(object).ifPresent(observation -> {
                    SandboxObservation previous = known.put(observation.ref().id(), observation);
                    if (!observation.equals(previous)) {
                        deliver(new SandboxEvent.Snapshot(observation));
                    }
                });
            case DELETED ->
                SandboxObjects.stamps(object).ifPresent(stamps -> {
                    SandboxObservation previous = known.remove(stamps.ref().id());
                    if (previous != null) {
                        deliver(new SandboxEvent.Deleted(previous.ref(), stamps.generation()));
                    }
                });
            case ERROR -> reconnect(new KubernetesClientException("the watch reported an error event"));
            case BOOKMARK -> {
                // carries only a resourceVersion; nothing to deliver
            }
        }
    }

    private void reconnect(Exception cause) {
        if (closed) {
            return;
        }
        if (reconnectAttempts == 0) {
            reconnectStartedNanos = System.nanoTime();
            log.warn("Sandbox watch ended ({}); listing again", cause.getMessage());
        }
        closeWatch();
        try {
            resync();
        } catch (RuntimeException e) { // DriverException from the API, or anything else the source threw
            reconnectAttempts++;
            Duration spent = Duration.ofNanos(System.nanoTime() - reconnectStartedNanos);
            if (spent.compareTo(reconnectBudget) >= 0) {
                log.warn("Sandbox watch could not reconnect within {}: {}", reconnectBudget, e.getMessage());
                closed = true;
                watcher.onError(new DriverException(
                        DriverErrorCode.UNAVAILABLE,
                        "the Sandbox watch could not reconnect within " + reconnectBudget + ": " + e.getMessage(),
                        e));
                events.shutdown();
                return;
            }
            long delayMillis = Math.min(2000, 100L << Math.min(reconnectAttempts, 5));
            var unused = events.schedule(() -> reconnect(e), delayMillis, TimeUnit.MILLISECONDS);
        }
    }

    private void deliver(SandboxEvent event) {
        if (!closed) {
            watcher.onEvent(event);
        }
    }

    private void closeWatch() {
        if (watch != null) {
            try {
                watch.close();
            } catch (RuntimeException e) {
                log.debug("closing the Sandbox watch failed", e);
            }
            watch = null;
        }
    }

    @Override
    public void close() {
        if (closed && events.isShutdown()) {
            return;
        }
        closed = true;
        try {
            events.execute(this::closeWatch);
        } catch (RejectedExecutionException e) {
            // the loop already ended after reporting an error
        }
        events.shutdown();
        if (Thread.currentThread() != eventThread) {
            try {
                events.awaitTermination(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Hands fabric8's callbacks to the events thread, in order. */
    private final class Forwarder implements Watcher<GenericKubernetesResource> {
        @Override
        public void eventReceived(Action action, GenericKubernetesResource resource) {
            submit(() -> onEvent(action, resource));
        }

        @Override
        public void onClose(WatcherException cause) {
            submit(() -> reconnect(cause));
        }

        @Override
        public void onClose() {
            // closed by us
        }

        private void submit(Runnable task) {
            if (!closed) {
                try {
                    events.execute(task);
                } catch (RejectedExecutionException e) {
                    // closed meanwhile
                }
            }
        }
    }
}
