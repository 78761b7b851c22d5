package dev.sandgate.conformance;

import static dev.sandgate.conformance.KitAssertions.assertEnvironment;
import static dev.sandgate.conformance.KitAssertions.assertObserved;
import static dev.sandgate.conformance.KitAssertions.expectFailure;
import static dev.sandgate.conformance.KitAssertions.withLabels;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.MutationHook.Operation;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.StartResult;
import dev.sandgate.spi.StopResult;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Lifecycle rules: what create, stop and delete do to the backend; repeating any of them is harmless; the state lives
 * in the backend, where a fresh driver instance finds it; a create the backend refuses for good fails for good.
 */
abstract class LifecycleRules extends IdentityRules {

    @Nested
    @DisplayName("Create, stop and delete")
    class Lifecycle {
        @Test
        void required_createStampsIdentityGenerationAndPolicyOnTheResource() {
            SandboxRef ref = kit.newRef("created");
            SandboxSpec labelled = withLabels(kit.spec, Map.of("team", "blue"));

            CreateResult result = kit.create(ref, labelled, kit.launch(1));

            assertThat(result.created()).isTrue();
            assertObserved(result.observation(), ref, 1, kit.basePolicy.digest());
            SandboxObservation running = kit.awaitState(ref, SandboxState.RUNNING, 1);
            assertObserved(running, ref, 1, kit.basePolicy.digest());
            assertThat(running.labels()).containsEntry("team", "blue");
            assertThat(kit.driver.list())
                    .filteredOn(observation -> observation.ref().id().equals(ref.id()))
                    .singleElement()
                    .satisfies(listed -> assertObserved(listed, ref, 1, kit.basePolicy.digest()));
            BackendResource resource = kit.onlyResource(ref.id());
            assertThat(resource.stamps())
                    .containsEntry(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE)
                    .containsEntry(Labels.GATEWAY_ID, kit.gatewayId)
                    .containsEntry(Labels.SANDBOX_ID, ref.id())
                    .containsEntry(Labels.WORKSPACE, ref.workspace())
                    .containsEntry(Labels.NAME, ref.name())
                    .containsEntry(Labels.GENERATION, "1")
                    .containsEntry(Labels.POLICY_DIGEST, kit.basePolicy.digest())
                    .containsEntry("team", "blue");
            assertThat(resource.running()).isTrue();
        }

        @Test
        void required_theSpecsEnvironmentReachesEveryExecutionUnchanged() {
            SandboxRef ref = kit.newRef("environment");
            Map<String, String> environment = Map.of(
                    "SANDGATE_KIT_PLAIN", "plain",
                    "SANDGATE_KIT_QUOTED", "it's \"quoted\" $HOME `id` \\ and a=b; done",
                    "SANDGATE_KIT_LINES", "-----BEGIN KEY-----\nline two\n-----END KEY-----",
                    "SANDGATE_KIT_EMPTY", "");
            Map<String, String> merged = new HashMap<>(kit.spec.environment());
            merged.putAll(environment);
            SandboxSpec spec = new SandboxSpec(
                    kit.spec.image(),
                    kit.spec.command(),
                    kit.spec.args(),
                    merged,
                    kit.spec.labels(),
                    kit.spec.resources());

            kit.createRunning(ref, spec);
            assertEnvironment(environment, kit.probe.launchedEnvironment(ref), "generation 1 (create)");

            // A start with another policy (where the driver takes one) may rebuild the execution; one with the same
            // policy may not: both keep the spec given at create.
            LaunchPolicy second = kit.capabilities.launchPolicyOnStart() ? kit.otherPolicy : kit.basePolicy;
            kit.driver.stop(ref, OptionalLong.of(1));
            assertThat(kit.start(ref, kit.launch(2, second)).launched()).isTrue();
            kit.awaitState(ref, SandboxState.RUNNING, 2);
            assertEnvironment(environment, kit.probe.launchedEnvironment(ref), "generation 2 (a start)");

            kit.driver.stop(ref, OptionalLong.of(2));
            assertThat(kit.start(ref, kit.launch(3, second)).launched()).isTrue();
            kit.awaitState(ref, SandboxState.RUNNING, 3);
            assertEnvironment(
                    environment, kit.probe.launchedEnvironment(ref), "generation 3 (a start with the same policy)");
        }

        @Test
        void required_stopStopsTheExecutionAndKeepsTheSandbox() {
            SandboxRef ref = kit.newRef("stopped");
            kit.createRunning(ref);
            ResourceFacts before = kit.facts(ref.id());

            StopResult result = kit.driver.stop(ref, OptionalLong.of(1));

            assertThat(result.stoppedNow()).isTrue();
            assertThat(result.observation().state()).isEqualTo(SandboxState.STOPPED);
            assertThat(kit.driver.get(ref).state())
                    .as("stop returns once the backend reports the execution stopped")
                    .isEqualTo(SandboxState.STOPPED);
            BackendResource after = kit.onlyResource(ref.id());
            assertThat(after.running())
                    .as("the backend reports the execution stopped")
                    .isFalse();
            assertThat(after.stamp(Labels.GENERATION)).isEqualTo("1");
            assertThat(kit.hook.calls(ref.id(), Operation.STOP))
                    .as("the MutationHook is called with STOP and the backend id before the stop")
                    .extracting(KitMutationHook.Call::backendId)
                    .contains(before.backendId());
        }

        @Test
        void required_deleteRemovesEveryResourceOfTheSandbox() {
            SandboxRef ref = kit.newRef("deleted");
            kit.createRunning(ref);
            ResourceFacts before = kit.facts(ref.id());

            DeleteResult result = kit.driver.delete(ref, OptionalLong.of(1));

            assertThat(result.deleted()).isTrue();
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.get(ref));
            assertThat(kit.driver.list())
                    .noneMatch(observation -> observation.ref().id().equals(ref.id()));
            kit.awaitNoResource(ref.id(), "delete must remove every resource of the sandbox");
            assertThat(kit.hook.calls(ref.id(), Operation.DELETE))
                    .as("the MutationHook is called with DELETE and the backend id before the removal")
                    .extracting(KitMutationHook.Call::backendId)
                    .contains(before.backendId());
        }
    }

    @Nested
    @DisplayName("Idempotency")
    class Idempotency {
        @Test
        void required_stopOfAStoppedSandboxSucceedsWithoutStopping() {
            SandboxRef ref = kit.newRef("stop-twice");
            kit.createRunning(ref);
            assertThat(kit.driver.stop(ref, OptionalLong.empty()).stoppedNow()).isTrue();
            ResourceFacts stopped = kit.facts(ref.id());

            StopResult again = kit.driver.stop(ref, OptionalLong.empty());

            assertThat(again.stoppedNow())
                    .as("a second stop reports stoppedNow == false")
                    .isFalse();
            assertThat(again.observation().state()).isEqualTo(SandboxState.STOPPED);
            assertThat(kit.driver.stop(ref, OptionalLong.of(1)).stoppedNow()).isFalse();
            kit.assertUntouched(stopped, "stop of a stopped sandbox");
        }

        @Test
        void required_startAtTheRunningGenerationChangesNothing() {
            SandboxRef ref = kit.newRef("start-running");
            kit.createRunning(ref);
            ResourceFacts running = kit.facts(ref.id());

            StartResult result = kit.start(ref, kit.launch(1));

            assertThat(result.launched())
                    .as("start at the running generation reports launched == false")
                    .isFalse();
            assertObserved(result.observation(), ref, 1, kit.basePolicy.digest());
            kit.assertUntouched(running, "start at the running generation");
        }

        @Test
        void required_deleteTwiceDeletesOnce() {
            SandboxRef ref = kit.newRef("delete-twice");
            kit.createRunning(ref);

            assertThat(kit.driver.delete(ref, OptionalLong.empty()).deleted()).isTrue();
            assertThat(kit.driver.delete(ref, OptionalLong.empty()).deleted())
                    .as("a second delete answers deleted == false")
                    .isFalse();
            assertThat(kit.driver.delete(ref, OptionalLong.of(1)).deleted()).isFalse();
            kit.awaitNoResource(ref.id(), "after delete");
        }

        @Test
        void required_createWithTheSameInputReturnsTheExistingSandbox() {
            SandboxRef ref = kit.newRef("create-twice");
            kit.createRunning(ref);
            ResourceFacts existing = kit.facts(ref.id());

            CreateResult again = kit.create(ref, kit.launch(1));

            assertThat(again.created())
                    .as("a repeated create reports created == false")
                    .isFalse();
            assertObserved(again.observation(), ref, 1, kit.basePolicy.digest());
            kit.assertUntouched(existing, "a repeated create");
        }

        @Test
        void required_createWithAnotherPolicyDigestFailsAlreadyExists() {
            SandboxRef ref = kit.newRef("create-other-policy");
            kit.createRunning(ref);
            ResourceFacts existing = kit.facts(ref.id());

            expectFailure(DriverErrorCode.ALREADY_EXISTS, () -> kit.create(ref, kit.launch(1, kit.otherPolicy)));

            kit.assertUntouched(existing, "create with another policy digest");
        }

        @Test
        void required_createWithAnotherGenerationFailsAlreadyExists() {
            SandboxRef ref = kit.newRef("create-other-generation");
            kit.createRunning(ref);
            ResourceFacts existing = kit.facts(ref.id());

            expectFailure(DriverErrorCode.ALREADY_EXISTS, () -> kit.create(ref, kit.launch(2)));

            kit.assertUntouched(existing, "create with another generation");
        }
    }

    @Nested
    @DisplayName("State lives in the backend")
    class StateLivesInTheBackend {
        @Test
        void required_aFreshDriverInstanceFindsEverySandbox() {
            SandboxRef running = kit.newRef("survivor-running");
            kit.createRunning(running);
            SandboxRef stopped = kit.newRef("survivor-stopped");
            kit.createRunning(stopped);
            kit.driver.stop(stopped, OptionalLong.of(1));

            ComputeDriver fresh = kit.newDriverInstance();

            assertObserved(fresh.get(running), running, 1, kit.basePolicy.digest());
            assertThat(fresh.get(running).state()).isEqualTo(SandboxState.RUNNING);
            assertThat(fresh.get(stopped).state()).isEqualTo(SandboxState.STOPPED);
            Map<SandboxRef, SandboxState> listed = new HashMap<>();
            fresh.list().forEach(observation -> listed.put(observation.ref(), observation.state()));
            assertThat(listed)
                    .containsEntry(running, SandboxState.RUNNING)
                    .containsEntry(stopped, SandboxState.STOPPED);
            assertThat(fresh.stop(running, OptionalLong.of(1)).stoppedNow())
                    .as("the fresh instance can act on what it found")
                    .isTrue();
            fresh.close();
        }
    }

    @Nested
    @DisplayName("A create the backend can never carry out")
    class PermanentCreateFailure {
        /**
         * A create the backend refuses for good fails with a permanent code (or the sandbox reports FAILED) within the
         * readiness timeout, and a delete then leaves nothing.
         */
        @Test
        void required_aCreateTheBackendRefusesForGoodFailsPermanentlyAndCanBeDeleted() {
            SandboxRef ref = kit.newRef("refused");
            SandboxSpec refused = kit.permanentlyRefusedSpec();

            Object answer = boundedByTheReadinessTimeout(() -> kit.create(ref, refused, kit.launch(1)));

            switch (answer) {
                case DriverException e ->
                    assertThat(e.code().isTransient())
                            .as(
                                    "a backend that answered it can never launch %s must be reported with a permanent"
                                            + " code, not %s (the gateway would retry it forever): %s",
                                    refused.image(), e.code(), e.getMessage())
                            .isFalse();
                case CreateResult accepted ->
                    kit.awaitObservation(
                            kit.driver,
                            ref,
                            observation -> observation.state() == SandboxState.FAILED,
                            "FAILED (the backend can never launch " + refused.image() + ")");
                default -> fail("create answered %s", answer);
            }
            kit.driver.delete(ref, OptionalLong.empty());
            kit.awaitNoResource(ref.id(), "after the delete of a sandbox whose create was refused for good");
        }

        /** The call's result or its DriverException; fails if it has not answered within the readiness timeout. */
        private Object boundedByTheReadinessTimeout(Callable<Object> call) {
            ExecutorService thread = Executors.newSingleThreadExecutor();
            try {
                Future<Object> answer = thread.submit(() -> {
                    try {
                        return call.call();
                    } catch (DriverException e) {
                        return e;
                    }
                });
                return answer.get(kit.timeout.toNanos(), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                return fail(
                        "create of a spec the backend refuses for good did not answer within %s: a permanent failure"
                                + " must not be retried",
                        kit.timeout);
            } catch (ExecutionException e) {
                throw new AssertionError("create failed with something other than a DriverException", e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            } finally {
                thread.shutdownNow();
            }
        }
    }
}
