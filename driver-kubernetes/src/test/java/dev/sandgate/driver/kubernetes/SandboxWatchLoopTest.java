package dev.sandgate.driver.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.SandboxWatcher;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The watch loop against a hand-written {@link SandboxWatchLoop.Source}: what it delivers on start, on changes, and
 * when the watch ends and it must list again.
 */
class SandboxWatchLoopTest {
    private final FakeSource source = new FakeSource();
    private final RecordingWatcher watcher = new RecordingWatcher();
    private SandboxWatchLoop loop;

    private void awaitWatches(int count) {
        await(count + " watches of the source")
                .atMost(Duration.ofSeconds(10))
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(1))
                .until(() -> source.watchedFrom.size() >= count);
    }

    @AfterEach
    void closeLoop() {
        if (loop != null) {
            loop.close();
        }
    }

    private void startLoop() {
        startLoop(Duration.ofSeconds(5));
    }

    private void startLoop(Duration reconnectBudget) {
        loop = new SandboxWatchLoop(
                source,
                object -> SandboxObjects.stamps(object)
                        .map(stamps -> SandboxObjects.observe(object, stamps, SandboxApiVersion.V1BETA1)),
                watcher,
                reconnectBudget);
        loop.start();
    }

    private static SandboxRef ref(String name) {
        return new SandboxRef(Identifiers.newSandboxId(), "team", name);
    }

    private static GenericKubernetesResource sandbox(
            SandboxRef ref, long generation, String resourceVersion, boolean ready) {
        return new GenericKubernetesResourceBuilder()
                .withApiVersion("agents.x-k8s.io/v1beta1")
                .withKind("Sandbox")
                .withNewMetadata()
                .withName(ref.name())
                .withNamespace("sandboxes")
                .withUid("uid-" + ref.id())
                .withResourceVersion(resourceVersion)
                .withGeneration(1L)
                .addToLabels(Labels.SANDBOX_ID, ref.id())
                .addToLabels(Labels.WORKSPACE, ref.workspace())
                .addToLabels(Labels.GENERATION, Long.toString(generation))
                .addToAnnotations(Labels.NAME, ref.name())
                .addToAnnotations(Labels.POLICY_DIGEST, "sha256:" + "0".repeat(64))
                .endMetadata()
                .withAdditionalProperties(Map.of(
                        "spec",
                        Map.of("operatingMode", "Running"),
                        "status",
                        Map.of(
                                "conditions",
                                List.of(Map.of(
                                        "type",
                                        "Ready",
                                        "status",
                                        ready ? "True" : "False",
                                        "reason",
                                        ready ? "DependenciesReady" : "DependenciesNotReady",
                                        "observedGeneration",
                                        1)))))
                .build();
    }

    @Test
    void startDeliversASnapshotOfEverySandboxThenSynced() {
        SandboxRef first = ref("first");
        SandboxRef second = ref("second");
        source.items = List.of(sandbox(first, 1, "10", true), sandbox(second, 3, "11", false));

        startLoop();

        assertThat(watcher.events()).hasSize(3);
        assertThat(watcher.events().subList(0, 2))
                .map(event -> ((SandboxEvent.Snapshot) event).observation())
                .extracting(observation -> observation.ref(), observation -> observation.generation())
                .containsExactlyInAnyOrder(
                        org.assertj.core.groups.Tuple.tuple(first, 1L),
                        org.assertj.core.groups.Tuple.tuple(second, 3L));
        assertThat(watcher.events().get(2)).isInstanceOf(SandboxEvent.Synced.class);
        awaitWatches(1);
        assertThat(source.watchedFrom).containsExactly("42");
    }

    @Test
    void aChangeIsDeliveredAndAReplayOfTheSameStateIsNot() {
        SandboxRef ref = ref("changing");
        source.items = List.of(sandbox(ref, 1, "10", false));
        startLoop();

        source.forwarder.eventReceived(Watcher.Action.ADDED, sandbox(ref, 1, "10", false)); // the mock's replay
        source.forwarder.eventReceived(Watcher.Action.MODIFIED, sandbox(ref, 1, "12", true));

        SandboxEvent.Snapshot running =
                (SandboxEvent.Snapshot) watcher.await(event -> event instanceof SandboxEvent.Snapshot snapshot
                        && snapshot.observation().state() == SandboxState.RUNNING);
        assertThat(running.observation().ref()).isEqualTo(ref);
        assertThat(watcher.events())
                .as("the initial snapshot, Synced, then only the change")
                .hasSize(3);
    }

    @Test
    void aDeletionIsDeliveredOnceWithTheGenerationOfTheDeletedSandbox() {
        SandboxRef ref = ref("deleted");
        source.items = List.of(sandbox(ref, 2, "10", true));
        startLoop();

        source.forwarder.eventReceived(Watcher.Action.DELETED, sandbox(ref, 2, "13", true));
        source.forwarder.eventReceived(Watcher.Action.DELETED, sandbox(ref, 2, "13", true));
        SandboxRef witness = ref("witness");
        source.forwarder.eventReceived(Watcher.Action.ADDED, sandbox(witness, 1, "14", true));
        watcher.await(event -> event instanceof SandboxEvent.Snapshot snapshot
                && snapshot.observation().ref().equals(witness));

        assertThat(watcher.events())
                .filteredOn(SandboxEvent.Deleted.class::isInstance)
                .containsExactly(new SandboxEvent.Deleted(ref, 2));
    }

    @Test
    void whenTheWatchEndsItListsAgainDeliveringWhatChangedMeanwhile() {
        SandboxRef stays = ref("stays");
        SandboxRef goes = ref("goes");
        source.items = List.of(sandbox(stays, 1, "10", true), sandbox(goes, 1, "11", true));
        startLoop();
        SandboxRef arrives = ref("arrives");
        source.items = List.of(sandbox(stays, 1, "10", true), sandbox(arrives, 1, "20", true));
        source.resourceVersion = "99";

        source.forwarder.onClose(new WatcherException("410: too old resource version"));

        watcher.await(event -> event instanceof SandboxEvent.Synced, 2);
        List<SandboxEvent> resync = watcher.events().subList(3, watcher.events().size());
        assertThat(resync)
                .filteredOn(SandboxEvent.Snapshot.class::isInstance)
                .map(event -> ((SandboxEvent.Snapshot) event).observation().ref())
                .containsExactlyInAnyOrder(stays, arrives);
        assertThat(resync).contains(new SandboxEvent.Deleted(goes, 1));
        assertThat(resync.get(resync.size() - 1)).isInstanceOf(SandboxEvent.Synced.class);
        // The loop opens the next watch right after delivering Synced: wait for it rather than race it.
        awaitWatches(2);
        assertThat(source.watchedFrom).containsExactly("42", "99");
        assertThat(source.closedWatches).hasValue(1);
    }

    @Test
    void aWatchThatCannotBeReestablishedEndsWithOnError() {
        source.items = List.of();
        startLoop(Duration.ofMillis(300));
        source.failListing = true;

        source.forwarder.onClose(new WatcherException("connection reset"));

        assertThat(watcher.awaitError())
                .satisfies(error -> assertThat(error.code()).isEqualTo(dev.sandgate.spi.DriverErrorCode.UNAVAILABLE));
    }

    @Test
    void nothingIsDeliveredAfterClose() {
        SandboxRef ref = ref("closed");
        source.items = List.of(sandbox(ref, 1, "10", false));
        startLoop();
        Watcher<GenericKubernetesResource> forwarder = source.forwarder;

        loop.close();
        forwarder.eventReceived(Watcher.Action.MODIFIED, sandbox(ref, 1, "12", true));

        assertThat(watcher.events()).hasSize(2);
        assertThat(source.closedWatches).hasValue(1);
    }

    /** Lists {@link #items} at {@link #resourceVersion}; remembers the watcher it was given. */
    private static final class FakeSource implements SandboxWatchLoop.Source {
        volatile List<GenericKubernetesResource> items = List.of();
        volatile String resourceVersion = "42";
        volatile boolean failListing;
        volatile Watcher<GenericKubernetesResource> forwarder;
        final List<String> watchedFrom = new CopyOnWriteArrayList<>();
        final AtomicInteger closedWatches = new AtomicInteger();

        @Override
        public SandboxWatchLoop.Listing list() {
            if (failListing) {
                throw new io.fabric8.kubernetes.client.KubernetesClientException("connection refused");
            }
            return new SandboxWatchLoop.Listing(items, resourceVersion);
        }

        @Override
        public Watch watch(String from, Watcher<GenericKubernetesResource> watcher) {
            watchedFrom.add(from);
            forwarder = watcher;
            return closedWatches::incrementAndGet;
        }
    }

    /** Records events; waits for one with a deadline. */
    private static final class RecordingWatcher implements SandboxWatcher {
        private final List<SandboxEvent> events = new ArrayList<>();
        private DriverException error;

        @Override
        public synchronized void onEvent(SandboxEvent event) {
            events.add(event);
            notifyAll();
        }

        @Override
        public synchronized void onError(DriverException failure) {
            error = failure;
            notifyAll();
        }

        synchronized List<SandboxEvent> events() {
            return List.copyOf(events);
        }

        SandboxEvent await(Predicate<SandboxEvent> matches) {
            return await(matches, 1);
        }

        /** Waits for the {@code count}th event that matches. */
        synchronized SandboxEvent await(Predicate<SandboxEvent> matches, int count) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (true) {
                List<SandboxEvent> matching = events.stream().filter(matches).toList();
                if (matching.size() >= count) {
                    return matching.get(count - 1);
                }
                waitUntil(deadline, "event");
            }
        }

        synchronized DriverException awaitError() {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (error == null) {
                waitUntil(deadline, "onError");
            }
            return error;
        }

        @SuppressWarnings("WaitNotInLoop") // every caller loops on its condition
        private void waitUntil(long deadline, String what) {
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                throw new AssertionError("no " + what + " within 10 s; events: " + events);
            }
            try {
                wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(remaining)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }
}
