package dev.sandgate.driver.toolkit;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Turns successive snapshots of a backend (everything it holds now) into watch events: each sandbox whose observation
 * changed since the previous snapshot becomes a {@link SandboxEvent.Snapshot}, each that vanished one {@link
 * SandboxEvent.Deleted} carrying its last generation. A driver that can only list its backend gets a correct watch
 * from this and {@link PollingWatch}.
 *
 * <p>Not thread-safe: one per subscription, used by its polling thread.
 *
 * @param <T> what a scan yields per sandbox (an observation, or an observation with backend details)
 */
public final class SnapshotDiff<T> {
    private final Function<T, SandboxObservation> observation;
    private final BiFunction<T, T, List<SandboxEvent>> before;
    private Map<String, T> known = Map.of();

    /**
     * @param observation what the watcher sees of a sample
     * @param before the events to deliver before a sample's snapshot, given the previous sample of the same sandbox
     *     (null if new) and the current one: platform events such as boot stages; {@code (was, is) -> List.of()} for
     *     none
     */
    public SnapshotDiff(Function<T, SandboxObservation> observation, BiFunction<T, T, List<SandboxEvent>> before) {
        this.observation = requireNonNull(observation, "observation is null");
        this.before = requireNonNull(before, "before is null");
    }

    /** A diff of plain observations, with no platform events. */
    public static SnapshotDiff<SandboxObservation> ofObservations() {
        return new SnapshotDiff<>(Function.identity(), (was, is) -> List.of());
    }

    /**
     * The first snapshot: every sandbox as a {@link SandboxEvent.Snapshot} and nothing else (no platform events, which
     * would come before {@link SandboxEvent.Synced}; what happened before the subscription is not news).
     */
    public List<SandboxEvent> first(Collection<T> samples) {
        var events = new ArrayList<SandboxEvent>(samples.size());
        var now = new HashMap<String, T>();
        for (T sample : samples) {
            SandboxObservation is = observation.apply(sample);
            now.put(is.ref().id(), sample);
            events.add(new SandboxEvent.Snapshot(is));
        }
        known = now;
        return events;
    }

    /** The events that tell a watcher what changed between the previous snapshot and {@code samples}. */
    public List<SandboxEvent> next(Collection<T> samples) {
        var events = new ArrayList<SandboxEvent>();
        var now = new HashMap<String, T>();
        for (T sample : samples) {
            SandboxObservation is = observation.apply(sample);
            T was = known.get(is.ref().id());
            now.put(is.ref().id(), sample);
            events.addAll(before.apply(was, sample));
            if (was == null || !observation.apply(was).equals(is)) {
                events.add(new SandboxEvent.Snapshot(is));
            }
        }
        var removed = new ArrayList<SandboxObservation>();
        known.forEach((id, sample) -> {
            if (!now.containsKey(id)) {
                removed.add(observation.apply(sample));
            }
        });
        events.addAll(events(List.of(), removed));
        known = now;
        return events;
    }

    /** A {@link PollingWatch.Poller} that diffs the snapshots {@code scan} takes. */
    public PollingWatch.Poller poller(Supplier<? extends Collection<T>> scan) {
        requireNonNull(scan, "scan is null");
        return new PollingWatch.Poller() {
            @Override
            public List<SandboxEvent> first() {
                return SnapshotDiff.this.first(scan.get());
            }

            @Override
            public List<SandboxEvent> next() {
                return SnapshotDiff.this.next(scan.get());
            }
        };
    }

    /**
     * The events for a delta a driver computed itself (an incremental scan): a snapshot of each changed sandbox, then
     * a deletion of each removed one, carrying its last observed generation.
     */
    public static List<SandboxEvent> events(List<SandboxObservation> changed, List<SandboxObservation> removed) {
        var events = new ArrayList<SandboxEvent>(changed.size() + removed.size());
        changed.forEach(observation -> events.add(new SandboxEvent.Snapshot(observation)));
        removed.forEach(last -> events.add(new SandboxEvent.Deleted(last.ref(), last.generation())));
        return events;
    }
}
