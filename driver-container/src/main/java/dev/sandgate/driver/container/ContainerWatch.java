package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.Event;
import com.github.dockerjava.api.model.EventType;
import dev.sandgate.driver.container.ContainerBackend.SandboxContainers;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.WatchSubscription;
import java.io.Closeable;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One watch subscription: the engine's container event stream, filtered by this gateway's label, turned into
 * {@link SandboxEvent}s by looking at the sandbox again after each event: an inspect of its current container when the
 * driver's {@link ContainerIndex} names it, else a list by label and an inspect.
 *
 * <ul>
 *   <li>On subscribe and after every reconnect: a snapshot of every sandbox, then {@link SandboxEvent.Synced}.
 *   <li>An event for a sandbox that still has a container: a snapshot of its current container (the highest
 *       generation), when it differs from the last one delivered. Since the current container only moves forward, no
 *       snapshot of an older generation follows one of a newer generation.
 *   <li>An exit or out-of-memory event of the current container: a {@link SandboxEvent.Platform} event; events of
 *       replaced containers are not reported.
 *   <li>An event for a sandbox that no longer has any container: one {@link SandboxEvent.Deleted}, the first time.
 *       A start creates the next container before it removes the previous one, so a restart never looks like a
 *       deletion.
 *   <li>A sandbox's events are looked at once, {@link #QUIET_PERIOD} after the first of a burst, with one look for
 *       all of them. While a lifecycle call of the driver holds the sandbox's lock they are not looked at: the
 *       sandbox is marked and looked at once, a quiet period after the call released the lock (the driver signals each
 *       watch, {@link #settled}), unless the next call holds it by then. The look-ups would otherwise run on the engine between the call's own requests, and the
 *       call changes the sandbox again anyway; the look afterwards sees its final state, out-of-band changes made
 *       meanwhile included. Exit and out-of-memory notes gathered meanwhile are reported then, if their container is
 *       still the current one.
 * </ul>
 *
 * One thread delivers every event, in order. When the stream breaks, the watch reconnects with growing pauses for up
 * to the configured reconnect timeout, then reports {@link SandboxWatcher#onError}.
 */
final class ContainerWatch implements WatchSubscription {
    private static final Logger log = LoggerFactory.getLogger(ContainerWatch.class);
    private static final Duration STREAM_START_TIMEOUT = Duration.ofSeconds(10);
    /**
     * How long a sandbox's events wait before the watch looks at it: events of one change arrive in bursts (kill, die,
     * stop), often after the driver's call has returned, and a client commonly sends its next call on the sandbox right
     * away. One look after a short quiet period costs the engine one inspect and never lands in the middle of that next
     * call (which, holding the lock, postpones the look to its own end).
     */
    static final Duration QUIET_PERIOD = Duration.ofMillis(100);

    private final ContainerBackend backend;
    private final ContainerIndex index;
    private final SandboxWatcher watcher;
    private final Consumer<ContainerWatch> onClose;
    private final Predicate<String> operationInFlight;
    private final DockerClient streamingClient;
    private final BlockingQueue<Signal> signals = new LinkedBlockingQueue<>();
    private final Map<String, SandboxObservation> delivered = new HashMap<>();
    /** Sandboxes whose events came while a lifecycle call held their lock, with the notes to report. Dispatcher's. */
    private final Map<String, List<PlatformNote>> deferred = new HashMap<>();
    /** When the look at each deferred sandbox is due (System.nanoTime), unless a call holds its lock. Dispatcher's. */
    private final Map<String, Long> due = new HashMap<>();

    private final Thread dispatcher;
    private final CountDownLatch closing = new CountDownLatch(1);
    private volatile boolean closed;
    private volatile EventStream stream;

    private sealed interface Signal {
        record Resync() implements Signal {}

        record Change(EventStream source, Event event) implements Signal {}

        record Settled(String sandboxId) implements Signal {}

        record StreamLost(EventStream source, Throwable cause) implements Signal {}

        record Closed() implements Signal {}
    }

    /**
     * @param operationInFlight whether a lifecycle call of the driver holds a sandbox's lock right now; the driver calls
     *     {@link #settled} after each call released it
     */
    ContainerWatch(
            ContainerBackend backend,
            ContainerIndex index,
            SandboxWatcher watcher,
            Predicate<String> operationInFlight,
            Consumer<ContainerWatch> onClose) {
        this.backend = requireNonNull(backend, "backend is null");
        this.index = requireNonNull(index, "index is null");
        this.watcher = requireNonNull(watcher, "watcher is null");
        this.operationInFlight = requireNonNull(operationInFlight, "operationInFlight is null");
        this.onClose = requireNonNull(onClose, "onClose is null");
        this.streamingClient = EngineClients.connect(backend.settings(), null);
        this.dispatcher = Thread.ofPlatform()
                .daemon()
                .name("sandgate-watch-" + backend.gatewayId())
                .unstarted(this::dispatch);
    }

    /** Opens the event stream and returns once the engine has accepted it; the initial snapshots follow. */
    void start() {
        stream = open();
        signals.add(new Signal.Resync());
        dispatcher.start();
    }

    /**
     * A lifecycle call on {@code sandboxId} released its lock: the sandbox is looked at now if events of it came while
     * the call ran. Called by the driver after every call; cheap when nothing came.
     */
    void settled(String sandboxId) {
        if (!closed) {
            signals.add(new Signal.Settled(sandboxId));
        }
    }

    private EventStream open() {
        EventStream opened = new EventStream();
        streamingClient
                .eventsCmd()
                .withEventTypeFilter(EventType.CONTAINER)
                .withLabelFilter(Map.of(Labels.GATEWAY_ID, backend.gatewayId()))
                .exec(opened);
        opened.awaitStarted();
        return opened;
    }

    private void dispatch() {
        try {
            while (!closed) {
                Signal signal = signals.poll(untilNextLook(), TimeUnit.NANOSECONDS);
                if (signal == null) {
                    lookAtDueSandboxes();
                    continue;
                }
                switch (signal) {
                    case Signal.Resync resync -> resyncOrReconnect();
                    case Signal.Change change -> {
                        if (change.source() == stream) {
                            onChange(change);
                        }
                    }
                    case Signal.Settled settled -> onSettled(settled.sandboxId());
                    case Signal.Closed done -> {}
                    case Signal.StreamLost lost -> {
                        if (lost.source() == stream) {
                            log.info(
                                    "The {} event stream broke ({}); reconnecting",
                                    backend.dialect().engineName(),
                                    EngineErrors.reason(lost.cause()));
                            reconnect();
                        }
                    }
                }
                lookAtDueSandboxes();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (WatchFailed e) {
            fail(e.error);
        } catch (RuntimeException e) {
            fail(new DriverException(DriverErrorCode.INTERNAL, "the watch failed: " + e.getMessage(), e));
        }
    }

    private void resyncOrReconnect() throws InterruptedException {
        try {
            resync();
        } catch (DriverException e) {
            if (e.code() != DriverErrorCode.UNAVAILABLE && e.code() != DriverErrorCode.DEADLINE_EXCEEDED) {
                throw new WatchFailed(e);
            }
            reconnect();
        }
    }

    private void resync() {
        Map<String, SandboxContainers> all = backend.findAll();
        delivered.clear();
        for (SandboxContainers found : all.values()) {
            Optional<SandboxObservation> observation = backend.observeQuietly(found.current(), true);
            observation.ifPresent(value -> {
                delivered.put(value.ref().id(), value);
                deliver(new SandboxEvent.Snapshot(value));
            });
        }
        deliver(new SandboxEvent.Synced());
    }

    private void onChange(Signal.Change change) {
        Event event = change.event();
        Map<String, String> attributes = attributes(event);
        String sandboxId = attributes.get(Labels.SANDBOX_ID);
        if (sandboxId == null || !backend.gatewayId().equals(attributes.get(Labels.GATEWAY_ID))) {
            return;
        }
        ContainerEventKind kind = backend.dialect().classify(event.getAction(), attributes);
        if (kind == ContainerEventKind.IGNORED) {
            return;
        }
        index.onEvent(sandboxId, containerId(event), attributes.get("name"), kind == ContainerEventKind.REMOVED);
        Optional<PlatformNote> note = switch (kind) {
            case IGNORED, STATE_CHANGED, REMOVED -> Optional.empty();
            case EXITED ->
                Optional.of(new PlatformNote(
                        containerId(event), "exited", "the container exited with code " + exitCode(attributes)));
            case OUT_OF_MEMORY ->
                Optional.of(new PlatformNote(
                        containerId(event),
                        "out-of-memory",
                        "a process of the container was killed for exceeding the memory limit"));
        };
        // One look covers every event of the sandbox until then; notes are kept for it. While a call holds the lock
        // the look waits for its Settled signal; otherwise it is due after the quiet period.
        List<PlatformNote> notes = deferred.computeIfAbsent(sandboxId, id -> new ArrayList<>());
        note.ifPresent(notes::add);
        if (!operationInFlight.test(sandboxId)) {
            due.putIfAbsent(sandboxId, System.nanoTime() + QUIET_PERIOD.toNanos());
        }
    }

    /** The lifecycle call on {@code sandboxId} ended: its events, if any came, are looked at after the quiet period. */
    private void onSettled(String sandboxId) {
        if (deferred.containsKey(sandboxId) && !operationInFlight.test(sandboxId)) {
            due.put(sandboxId, System.nanoTime() + QUIET_PERIOD.toNanos());
        }
    }

    /** Nanoseconds until the next look is due; a long wait when none is. */
    private long untilNextLook() {
        long now = System.nanoTime();
        long wait = TimeUnit.SECONDS.toNanos(1);
        for (long at : due.values()) {
            wait = Math.min(wait, Math.max(0, at - now));
        }
        return wait;
    }

    /**
     * Looks at every sandbox whose look is due. One whose lock a call holds again waits for that call's Settled signal
     * instead.
     */
    private void lookAtDueSandboxes() {
        long now = System.nanoTime();
        for (String sandboxId : List.copyOf(due.keySet())) {
            if (due.get(sandboxId) - now > 0) {
                continue;
            }
            due.remove(sandboxId);
            if (!operationInFlight.test(sandboxId)) {
                refresh(sandboxId, deferred.remove(sandboxId));
            }
        }
    }

    private record PlatformNote(String containerId, String type, String message) {}

    private static Map<String, String> attributes(Event event) {
        return event.getActor() == null || event.getActor().getAttributes() == null
                ? Map.of()
                : event.getActor().getAttributes();
    }

    private void refresh(String sandboxId, List<PlatformNote> notes) {
        Optional<ContainerView> current;
        SandboxObservation value;
        try {
            Optional<Optional<ContainerView>> looked = look(sandboxId);
            if (looked.isEmpty()) {
                SandboxObservation last = delivered.remove(sandboxId);
                if (last != null) {
                    deliver(new SandboxEvent.Deleted(last.ref(), last.generation()));
                }
                return;
            }
            current = looked.get();
            if (current.isEmpty()) {
                // Removed between the list and the inspect: its removal event follows.
                return;
            }
            value = current.get().observation();
        } catch (DriverException e) {
            if (e.code() == DriverErrorCode.INTERNAL) {
                log.warn("Ignoring a container of sandbox {}: {}", sandboxId, e.getMessage());
            } else {
                // The stream itself will break if the engine is gone; a resync then repairs what this event missed.
                log.debug("Could not look at sandbox {} after an event: {}", sandboxId, e.getMessage());
            }
            return;
        }
        for (PlatformNote note : notes) {
            if (note.containerId().equals(current.get().id())) {
                deliver(new SandboxEvent.Platform(value.ref(), value.generation(), note.type(), note.message()));
            }
        }
        if (!value.equals(delivered.get(sandboxId))) {
            delivered.put(sandboxId, value);
            deliver(new SandboxEvent.Snapshot(value));
        }
    }

    /**
     * The current container of {@code sandboxId}, inspected (Docker reports an event before its container list shows
     * the change): empty if no container carries the id; an empty inner value if the current one went between the
     * list and the inspect.
     *
     * <p>When the driver's index names the sandbox's current container, that container is inspected and nothing is
     * listed: every event of this gateway's containers passes through {@link ContainerIndex#onEvent} before it is
     * looked at, and one the driver does not explain (a container created or removed behind its back) drops the entry.
     * If the indexed container is gone, the sandbox is listed as without an index.
     */
    private Optional<Optional<ContainerView>> look(String sandboxId) {
        Optional<ContainerIndex.Known> known = index.get(sandboxId);
        if (known.isPresent()) {
            Optional<ContainerView> view = backend.inspect(known.get().containerId());
            if (view.isPresent()) {
                return Optional.of(view);
            }
        }
        Optional<SandboxContainers> found = backend.find(sandboxId);
        if (found.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(backend.inspect(found.get().current().id()));
    }

    private static String containerId(Event event) {
        if (event.getActor() != null && event.getActor().getId() != null) {
            return event.getActor().getId();
        }
        return event.getId() == null ? "" : event.getId();
    }

    private static String exitCode(Map<String, String> attributes) {
        String code = attributes.get("exitCode");
        return code == null ? attributes.getOrDefault("containerExitCode", "unknown") : code;
    }

    private void reconnect() throws InterruptedException {
        closeStream();
        // Events are lost until the stream is back: what the driver knows without looking may be stale.
        index.clear();
        Instant deadline = Instant.now().plus(backend.settings().watchReconnectTimeout());
        long pauseMillis = 100;
        DriverException last = null;
        while (!closed) {
            try {
                stream = open();
                resync();
                log.info("Reconnected to the {} event stream", backend.dialect().engineName());
                return;
            } catch (DriverException e) {
                last = e;
            } catch (RuntimeException e) {
                last = EngineErrors.map(e, "reconnecting to the event stream");
            }
            closeStream();
            if (Instant.now().isAfter(deadline)) {
                throw new WatchFailed(new DriverException(
                        DriverErrorCode.UNAVAILABLE,
                        "lost the " + backend.dialect().engineName() + " event stream and could not reconnect within "
                                + backend.settings().watchReconnectTimeout() + ": " + last.getMessage(),
                        last));
            }
            if (closing.await(pauseMillis, TimeUnit.MILLISECONDS)) {
                return;
            }
            pauseMillis = Math.min(pauseMillis * 2, 2_000);
        }
    }

    private void deliver(SandboxEvent event) {
        if (closed) {
            return;
        }
        try {
            watcher.onEvent(event);
        } catch (RuntimeException e) {
            log.warn("A watcher failed on {}", event.getClass().getSimpleName(), e);
        }
    }

    private void fail(DriverException error) {
        if (closed) {
            return;
        }
        closed = true;
        closing.countDown();
        closeStream();
        try {
            watcher.onError(error);
        } catch (RuntimeException e) {
            log.warn("A watcher failed on onError", e);
        }
        release();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closing.countDown();
        closeStream();
        // No interrupt: it would break the dispatcher's engine request half-way; the signal wakes it instead.
        signals.add(new Signal.Closed());
        release();
    }

    private void release() {
        try {
            streamingClient.close();
        } catch (IOException e) {
            log.debug("Closing the event client failed", e);
        }
        onClose.accept(this);
    }

    private void closeStream() {
        EventStream current = stream;
        if (current != null) {
            current.close();
        }
    }

    /** A failure that ends the subscription. */
    private static final class WatchFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final transient DriverException error;

        WatchFailed(DriverException error) {
            super(error.getMessage(), error, false, false);
            this.error = error;
        }
    }

    /** docker-java's callback for one connection of the event stream; it only queues what arrives. */
    private final class EventStream implements ResultCallback<Event> {
        private final CountDownLatch started = new CountDownLatch(1);
        private volatile Closeable connection;
        private volatile Throwable failure;
        private volatile boolean ended;

        @Override
        public void onStart(Closeable closeable) {
            connection = closeable;
            started.countDown();
        }

        @Override
        public void onNext(Event event) {
            signals.add(new Signal.Change(this, event));
        }

        @Override
        public void onError(Throwable throwable) {
            end(throwable);
        }

        @Override
        public void onComplete() {
            end(new IOException("the engine ended the event stream"));
        }

        private void end(Throwable cause) {
            if (ended) {
                return;
            }
            ended = true;
            failure = cause;
            started.countDown();
            if (!closed) {
                signals.add(new Signal.StreamLost(this, cause));
            }
        }

        void awaitStarted() {
            boolean answered;
            try {
                answered = started.await(STREAM_START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                close();
                throw new DriverException(DriverErrorCode.UNAVAILABLE, "interrupted while subscribing to events", e);
            }
            if (!answered) {
                close();
                throw new DriverException(
                        DriverErrorCode.DEADLINE_EXCEEDED,
                        "the " + backend.dialect().engineName() + " did not open its event stream within "
                                + STREAM_START_TIMEOUT);
            }
            if (connection == null) {
                Throwable cause = failure;
                RuntimeException asRuntime =
                        cause instanceof RuntimeException runtime ? runtime : new IllegalStateException(cause);
                throw EngineErrors.map(asRuntime, "subscribing to the event stream");
            }
        }

        @Override
        public void close() {
            ended = true;
            Closeable current = connection;
            if (current != null) {
                try {
                    current.close();
                } catch (IOException | RuntimeException e) {
                    log.debug("Closing the event stream failed", e);
                }
            }
        }
    }
}
