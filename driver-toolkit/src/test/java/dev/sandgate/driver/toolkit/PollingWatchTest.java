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

    private static final class Recorder implements SandboxWatcher {
        final BlockingQueue<SandboxEvent> events = new LinkedBlockingQueue<>();
        final AtomicReference<DriverException> error = new AtomicReference<>();

        @Override
        public void onEvent(SandboxEvent event) {
            events.add(event);
        }

        @Override
        public void onError(DriverException e) {
            error.set(e);
        }

        SandboxEvent take() throws InterruptedException {
            SandboxEvent event = events.poll(10, TimeUnit.SECONDS);
            assertThat(event).as("an event within 10 s").isNotNull();
            return event;
        }
    }

    @Test
    void deliversTheFirstSnapshotThenSyncedThenChangesAndDeletions() throws Exception {
        var state = new AtomicReference<List<SandboxObservation>>(List.of(observation(1, SandboxState.RUNNING)));
        var recorder = new Recorder();
        var closed = new CopyOnWriteArrayList<String>();
        try (var watch = PollingWatch.start(
                "test-watch",
                Duration.ofMillis(5),
                SnapshotDiff.ofObservations().poller(state::get),
                recorder,
                e -> new DriverException(DriverErrorCode.INTERNAL, "x", e),
                () -> closed.add("closed"))) {
            assertThat(recorder.take()).isEqualTo(new SandboxEvent.Snapshot(observation(1, SandboxState.RUNNING)));
            assertThat(recorder.take()).isEqualTo(new SandboxEvent.Synced());
            state.set(List.of(observation(1, SandboxState.STOPPED)));
            assertThat(recorder.take()).isEqualTo(new SandboxEvent.Snapshot(observation(1, SandboxState.STOPPED)));
            state.set(List.of());
            assertThat(recorder.take()).isEqualTo(new SandboxEvent.Deleted(REF, 1));
        }
        assertThat(closed).containsExactly("closed");
    }

    @Test
    void aFailedPollEndsTheSubscriptionWithTheMappedError() throws Exception {
        var recorder = new Recorder();
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
        PollingWatch.start(
                "test-watch",
                Duration.ofMillis(5),
                failing,
                recorder,
                e -> new DriverException(DriverErrorCode.UNAVAILABLE, "cannot read", e),
                closed::countDown);
        assertThat(recorder.take()).isEqualTo(new SandboxEvent.Synced());
        assertThat(closed.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(recorder.error.get().code()).isEqualTo(DriverErrorCode.UNAVAILABLE);
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
