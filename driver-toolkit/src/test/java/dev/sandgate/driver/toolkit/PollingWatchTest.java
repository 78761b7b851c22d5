package dev.sandgate.driver.toolkit;

import static dev.sandgate.driver.toolkit.StartDecisionTest.REF;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.SandboxWatcher;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class PollingWatchTest {
    private static SandboxObservation observation(long generation, SandboxState state) {
        return new SandboxObservation(REF, generation, state, "d", Map.of(), "");
    }

    /** What the watch handed the watcher, events and errors alike, in order. */
    private final BlockingQueue<Object> received = new LinkedBlockingQueue<>();

    private final SandboxWatcher recorder = new SandboxWatcher() {
        @Override
        public void onEvent(SandboxEvent event) {
            received.add(event);
        }

        @Override
        public void onError(DriverException error) {
            received.add(error);
        }
    };

    private Object next() throws InterruptedException {
        Object next = received.poll(10, TimeUnit.SECONDS);
        assertThat(next).as("something within 10 s").isNotNull();
        return next;
    }

    @Test
    void deliversTheFirstSnapshotThenSyncedThenChangesAndDeletions() throws Exception {
        var state = new AtomicReference<List<SandboxObservation>>(List.of(observation(1, SandboxState.RUNNING)));
        var closed = new CopyOnWriteArrayList<String>();
        try (var watch = new PollingWatch(
                        "test-watch",
                        Duration.ofMillis(5),
                        SnapshotDiff.ofObservations().poller(state::get),
                        recorder,
                        e -> new DriverException(DriverErrorCode.INTERNAL, "x", e),
                        () -> closed.add("closed"))
                .start()) {
            assertThat(next()).isEqualTo(new SandboxEvent.Snapshot(observation(1, SandboxState.RUNNING)));
            assertThat(next()).isEqualTo(new SandboxEvent.Synced());
            state.set(List.of(observation(1, SandboxState.STOPPED)));
            assertThat(next()).isEqualTo(new SandboxEvent.Snapshot(observation(1, SandboxState.STOPPED)));
            state.set(List.of());
            assertThat(next()).isEqualTo(new SandboxEvent.Deleted(REF, 1));
        }
        assertThat(closed).containsExactly("closed");
    }

    @Test
    void aFailedPollEndsTheSubscriptionWithTheMappedError() throws Exception {
        var closed = new java.util.concurrent.CountDownLatch(1);
        PollingWatch.Poller failing = new PollingWatch.Poller() {
            @Override
            public List<SandboxEvent> first() {
                return List.of();
            }

            @Override
            public List<SandboxEvent> next() {
                throw new UncheckedIOException(new java.io.IOException("disk gone"));
            }
        };
        new PollingWatch(
                        "test-watch",
                        Duration.ofMillis(5),
                        failing,
                        recorder,
                        e -> new DriverException(DriverErrorCode.UNAVAILABLE, "cannot read", e),
                        closed::countDown)
                .start();
        assertThat(next()).isEqualTo(new SandboxEvent.Synced());
        assertThat(closed.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(next())
                .isInstanceOfSatisfying(
                        DriverException.class, e -> assertThat(e.code()).isEqualTo(DriverErrorCode.UNAVAILABLE));
    }

    @Test
    void theDiffPutsPlatformEventsBeforeTheSnapshotSkipsUnchangedSandboxesAndStartsWithSnapshotsOnly() {
        var diff = new SnapshotDiff<SandboxObservation>(
                o -> o, (was, is) -> List.of(new SandboxEvent.Platform(is.ref(), is.generation(), "t", "m")));
        assertThat(diff.first(List.of(observation(1, SandboxState.RUNNING))))
                .containsExactly(new SandboxEvent.Snapshot(observation(1, SandboxState.RUNNING)));
        assertThat(diff.next(List.of(observation(1, SandboxState.RUNNING))))
                .containsExactly(new SandboxEvent.Platform(REF, 1, "t", "m"));
        assertThat(diff.next(List.of(observation(2, SandboxState.RUNNING))))
                .containsExactly(
                        new SandboxEvent.Platform(REF, 2, "t", "m"),
                        new SandboxEvent.Snapshot(observation(2, SandboxState.RUNNING)));
    }
}
