package dev.sandgate.conformance;

import static dev.sandgate.conformance.KitAssertions.assertObserved;
import static dev.sandgate.conformance.KitAssertions.deletedOf;
import static dev.sandgate.conformance.KitAssertions.expectFailure;
import static dev.sandgate.conformance.KitAssertions.snapshotOf;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Watch rules: a subscription starts with a snapshot of every sandbox of the gateway and {@code Synced}, then reports
 * each change once, in generation order, never a restart as a deletion and never another gateway's resource.
 */
abstract class WatchRules extends PolicyRules {

    @Nested
    @DisplayName("Watch")
    class Watch {
        @Test
        void required_watchDeliversASnapshotOfEverySandboxThenSynced() {
            SandboxRef ref = kit.newRef("watched");
            kit.createRunning(ref);
            SandboxRef foreign = kit.newRef("foreign-gateway");
            kit.plant(foreign, kit.foreignGatewayId, kit.basePolicy.digest());

            try (KitSession.Watching watching = kit.watch()) {
                int synced = watching.events().await(0, SandboxEvent.Synced.class::isInstance, "Synced");

                List<SandboxEvent> initial = watching.events().events().subList(0, synced);
                assertThat(initial)
                        .filteredOn(SandboxEvent.Snapshot.class::isInstance)
                        .map(event -> ((SandboxEvent.Snapshot) event).observation())
                        .filteredOn(observation -> observation.ref().id().equals(ref.id()))
                        .singleElement()
                        .satisfies(observation -> assertObserved(observation, ref, 1, kit.basePolicy.digest()));
                assertThat(initial)
                        .as("events before Synced are snapshots")
                        .allMatch(SandboxEvent.Snapshot.class::isInstance);
                assertThat(watching.events().events())
                        .as("no event for another gateway's resource")
                        .noneMatch(event -> EventRecorder.sandboxId(event).equals(Optional.of(foreign.id())));
            }
        }

        @Test
        void required_stopAndStartAreObservedWithTheirGeneration() {
            SandboxRef ref = kit.newRef("watched-lifecycle");
            kit.createRunning(ref);

            try (KitSession.Watching watching = kit.watch()) {
                EventRecorder events = watching.events();
                int synced = events.await(0, SandboxEvent.Synced.class::isInstance, "Synced");

                kit.driver.stop(ref, OptionalLong.of(1));
                int stopped = events.await(synced, snapshotOf(ref, SandboxState.STOPPED, 1), "a STOPPED snapshot");
                assertThat(kit.start(ref, kit.launch(2)).launched()).isTrue();
                int started = events.await(stopped, snapshotOf(ref, SandboxState.RUNNING, 2), "a RUNNING snapshot");

                assertThat(events.events().get(started))
                        .satisfies(event -> assertObserved(
                                ((SandboxEvent.Snapshot) event).observation(), ref, 2, kit.basePolicy.digest()));
            }
        }

        @Test
        void required_noSnapshotOfAnOlderGenerationFollowsANewerOneAfterARestart() {
            SandboxRef ref = kit.newRef("watched-restart");
            kit.createRunning(ref);

            try (KitSession.Watching watching = kit.watch()) {
                EventRecorder events = watching.events();
                int synced = events.await(0, SandboxEvent.Synced.class::isInstance, "Synced");
                kit.restart(ref, 1);
                int newer = events.await(synced, snapshotOf(ref, SandboxState.RUNNING, 2), "a RUNNING snapshot");
                kit.driver.stop(ref, OptionalLong.of(2));
                events.await(newer, snapshotOf(ref, SandboxState.STOPPED, 2), "a STOPPED snapshot at generation 2");

                List<Long> generations = events.events().stream()
                        .filter(SandboxEvent.Snapshot.class::isInstance)
                        .map(event -> ((SandboxEvent.Snapshot) event).observation())
                        .filter(observation -> observation.ref().id().equals(ref.id()))
                        .map(SandboxObservation::generation)
                        .toList();
                assertThat(generations)
                        .as("generations of the sandbox's snapshots, in delivery order")
                        .isSorted();
            }
        }

        @Test
        void required_stopAndStartAreNeverReportedAsDeletions() {
            KitScenarios.restartsAreNeverReportedAsDeletions(kit);
        }

        @Test
        void required_eachDeletionIsDeliveredExactlyOnce() {
            SandboxRef ref = kit.newRef("watched-delete");
            kit.createRunning(ref);
            SandboxRef witness = kit.newRef("witness");
            kit.createRunning(witness);

            try (KitSession.Watching watching = kit.watch()) {
                EventRecorder events = watching.events();
                int synced = events.await(0, SandboxEvent.Synced.class::isInstance, "Synced");

                assertThat(kit.driver.delete(ref, OptionalLong.of(1)).deleted()).isTrue();
                int deleted = events.await(synced, deletedOf(ref), "a Deleted event");
                // Then a later change of another sandbox, so that a duplicate Deleted would have arrived by now.
                kit.driver.stop(witness, OptionalLong.of(1));
                events.await(deleted, snapshotOf(witness, SandboxState.STOPPED, 1), "the witness's STOPPED snapshot");

                List<SandboxEvent> all = events.events();
                assertThat(all).filteredOn(deletedOf(ref)).hasSize(1);
                assertThat((SandboxEvent.Deleted) all.get(deleted)).satisfies(event -> {
                    assertThat(event.ref()).isEqualTo(ref);
                    assertThat(event.generation()).isEqualTo(1);
                });
                assertThat(all.subList(deleted, all.size()))
                        .as("no snapshot of a deleted sandbox follows its deletion")
                        .noneMatch(event -> event instanceof SandboxEvent.Snapshot snapshot
                                && snapshot.observation().ref().id().equals(ref.id()));
            }
        }

        @Test
        void required_noEventForAnUnknownOrForeignId() {
            SandboxRef witness = kit.newRef("witness");
            kit.createRunning(witness);

            try (KitSession.Watching watching = kit.watch()) {
                EventRecorder events = watching.events();
                int synced = events.await(0, SandboxEvent.Synced.class::isInstance, "Synced");
                SandboxRef unknown = kit.newRef("unknown");
                expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.get(unknown));
                expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.stop(unknown, OptionalLong.empty()));
                expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.start(unknown, kit.launch(1)));
                assertThat(kit.driver.delete(unknown, OptionalLong.empty()).deleted())
                        .isFalse();
                SandboxRef foreign = kit.newRef("foreign-gateway");
                kit.plant(foreign, kit.foreignGatewayId, kit.basePolicy.digest());
                kit.probe.remove(foreign.id());

                kit.driver.stop(witness, OptionalLong.of(1));
                events.await(synced, snapshotOf(witness, SandboxState.STOPPED, 1), "the witness's STOPPED snapshot");

                Set<String> strangers = Set.of(unknown.id(), foreign.id());
                assertThat(events.events())
                        .as("no event for an unknown id or another gateway's resource")
                        .noneMatch(event -> EventRecorder.sandboxId(event)
                                .filter(strangers::contains)
                                .isPresent());
            }
        }
    }
}
