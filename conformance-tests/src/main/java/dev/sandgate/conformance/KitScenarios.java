package dev.sandgate.conformance;

import static dev.sandgate.conformance.KitAssertions.expectFailure;
import static dev.sandgate.conformance.KitAssertions.snapshotOf;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.MutationHook.Operation;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Scenarios of the kit that the rule layers run from their groups: a name held by another id at
 * create, a resource replaced between lookup and mutation, restarts seen through a watch.
 */
final class KitScenarios {
    /** What the kit plants in place of the resource a driver resolved, at the moment the driver calls the hook. */
    enum Replacement {
        /** Another sandbox id with the same workspace and name. */
        ANOTHER_ID_SAME_NAME,
        /** A new incarnation (a new backend id) of the same sandbox id. */
        NEW_INCARNATION_OF_THE_ID
    }

    private KitScenarios() {}

    /**
     * A create of a new id whose workspace and name a resource of another id holds fails FAILED_PRECONDITION with a
     * {@code sandbox_id} mismatch, and neither returns, reuses nor changes that resource, running or stopped.
     */
    static void createOfANameHeldByAnotherIdFailsPrecondition(KitSession kit) {
        for (boolean running : new boolean[] {true, false}) {
            SandboxRef holder = kit.newRef(running ? "held-running" : "held-stopped");
            ResourceFacts held = ResourceFacts.of(
                    running
                            ? kit.plant(holder, kit.gatewayId, kit.basePolicy.digest())
                            : kit.plantStopped(holder, kit.gatewayId, kit.basePolicy.digest()));
            assertThat(held.running()).as("the planted holder runs").isEqualTo(running);
            SandboxRef newcomer = KitSession.sameNameNewId(holder);

            DriverException refused =
                    expectFailure(DriverErrorCode.FAILED_PRECONDITION, () -> kit.create(newcomer, kit.launch(1)));

            assertThat(refused.mismatches())
                    .as("the refusal names the id that holds %s/%s", holder.workspace(), holder.name())
                    .contains(new Mismatch(Mismatch.SANDBOX_ID, newcomer.id(), holder.id()));
            kit.assertUntouched(
                    held,
                    "create of a new id whose name another id's " + (running ? "running" : "stopped")
                            + " resource holds");
            assertThat(kit.probe.resources(newcomer.id()))
                    .as("resources carrying the refused new id")
                    .isEmpty();
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.get(newcomer));
        }
    }

    /**
     * The kit's hook removes the resource the driver resolved and plants a replacement, then the driver must leave
     * the replacement alone and not report success. For STOP and DELETE the replacement runs; for START it is stopped
     * (a running one would be refused by the Start(G) rules whatever the driver does), and the start asks for {@code
     * startGeneration}: 2 (a new execution) or 1 (a relaunch of the stopped generation).
     */
    static void replacementIsNeverTouched(
            KitSession kit, Operation operation, Replacement replacement, long startGeneration) {
        SandboxRef target = kit.newRef("replaced");
        kit.createRunning(target);
        if (operation == Operation.START) {
            kit.driver.stop(target, OptionalLong.of(1));
        }
        String resolvedBackendId = kit.onlyResource(target.id()).backendId();
        SandboxRef planted = switch (replacement) {
            case ANOTHER_ID_SAME_NAME -> KitSession.sameNameNewId(target);
            case NEW_INCARNATION_OF_THE_ID -> target;
        };
        var plantedResource = new AtomicReference<BackendResource>();
        KitMutationHook.Armed armed = kit.hook.arm(target.id(), operation, () -> {
            kit.probe.remove(target.id());
            plantedResource.set(
                    operation == Operation.START
                            ? kit.plantStopped(planted, kit.gatewayId, kit.basePolicy.digest())
                            : kit.plant(planted, kit.gatewayId, kit.basePolicy.digest()));
        });

        Object outcome;
        try {
            outcome = switch (operation) {
                case STOP -> kit.driver.stop(target, OptionalLong.empty());
                case START -> kit.start(target, kit.launch(startGeneration));
                case DELETE -> kit.driver.delete(target, OptionalLong.empty());
            };
        } catch (DriverException refused) {
            outcome = refused;
        }

        assertThat(armed.fired())
                .as("the driver calls the MutationHook with %s before mutating %s", operation, target)
                .isTrue();
        assertThat(armed.failure()).as("the kit's replacement action").isNull();
        assertThat(kit.hook.calls(target.id(), operation))
                .as("the MutationHook names the backend id the driver resolved")
                .extracting(KitMutationHook.Call::backendId)
                .contains(resolvedBackendId);
        ResourceFacts plantedFacts = ResourceFacts.of(plantedResource.get());
        kit.assertUntouched(plantedFacts, operation + " racing a replacement");
        assertThat(plantedFacts.running())
                .as("the replacement runs unless the race is a start's")
                .isEqualTo(operation != Operation.START);
        if (!(outcome instanceof DriverException)) {
            boolean truthfulDelete = operation == Operation.DELETE
                    && replacement == Replacement.ANOTHER_ID_SAME_NAME
                    && outcome instanceof DeleteResult result
                    && !result.deleted();
            assertThat(truthfulDelete)
                    .as(
                            "%s of a replaced resource must fail (a delete may answer deleted == false when nothing"
                                    + " carries the id), but answered %s",
                            operation, outcome)
                    .isTrue();
        }
    }

    /**
     * A stop and a start of a new generation, then a stop and a relaunch of that generation: a watch sees the
     * sandbox stop and run again each time, and never reports it deleted (a start that recreates the backend resource
     * is not a deletion).
     */
    static void restartsAreNeverReportedAsDeletions(KitSession kit) {
        SandboxRef ref = kit.newRef("watched-restarts");
        kit.createRunning(ref);

        try (KitSession.Watching watching = kit.watch()) {
            EventRecorder events = watching.events();
            int seen = events.await(0, SandboxEvent.Synced.class::isInstance, "Synced");
            kit.driver.stop(ref, OptionalLong.of(1));
            seen = events.await(seen, snapshotOf(ref, SandboxState.STOPPED, 1), "a STOPPED snapshot");
            assertThat(kit.start(ref, kit.launch(2)).launched()).isTrue();
            seen = events.await(seen, snapshotOf(ref, SandboxState.RUNNING, 2), "a RUNNING snapshot, generation 2");
            kit.driver.stop(ref, OptionalLong.of(2));
            seen = events.await(seen, snapshotOf(ref, SandboxState.STOPPED, 2), "a STOPPED snapshot, generation 2");
            assertThat(kit.start(ref, kit.launch(2)).launched())
                    .as("a relaunch of the stopped generation")
                    .isTrue();
            seen = events.await(
                    seen, snapshotOf(ref, SandboxState.RUNNING, 2), "a RUNNING snapshot after the relaunch");
            // A later change of the sandbox, so that a Deleted delivered late for a restart would have arrived by now.
            kit.driver.stop(ref, OptionalLong.of(2));
            events.await(seen, snapshotOf(ref, SandboxState.STOPPED, 2), "a STOPPED snapshot after the relaunch");

            List<SandboxEvent> deletions = events.events().stream()
                    .filter(event -> event instanceof SandboxEvent.Deleted deleted
                            && deleted.ref().id().equals(ref.id()))
                    .toList();
            assertThat(deletions)
                    .as("Deleted events of a sandbox that was only stopped and started again")
                    .isEmpty();
        }
        assertThat(kit.driver.get(ref).generation()).isEqualTo(2);
    }
}
