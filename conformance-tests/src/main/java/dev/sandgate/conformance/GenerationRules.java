package dev.sandgate.conformance;

import static dev.sandgate.conformance.KitAssertions.assertObserved;
import static dev.sandgate.conformance.KitAssertions.expectFailure;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.MutationHook.Operation;
import dev.sandgate.spi.PolicyField;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.StartResult;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.IntStream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Generation rules: each start launches a numbered execution generation with its own launch input; an expected
 * generation guards stop and delete; a resource replaced between the driver's lookup and its mutation is never
 * touched; racing calls end in a state the backend confirms.
 */
abstract class GenerationRules extends LifecycleRules {

    @Nested
    @DisplayName("Execution generations")
    class ExecutionGenerations {
        @Test
        void required_startAtTheSameGenerationRelaunchesAStoppedSandbox() {
            SandboxRef ref = kit.newRef("relaunch");
            kit.createRunning(ref);
            kit.driver.stop(ref, OptionalLong.of(1));
            String stoppedBackendId = kit.onlyResource(ref.id()).backendId();

            StartResult result = kit.start(ref, kit.launch(1));

            assertThat(result.launched())
                    .as("start at the stopped generation relaunches")
                    .isTrue();
            kit.awaitState(ref, SandboxState.RUNNING, 1);
            BackendResource resource = kit.onlyResource(ref.id());
            assertThat(resource.running()).isTrue();
            assertThat(resource.stamp(Labels.GENERATION)).isEqualTo("1");
            assertThat(resource.stamp(Labels.POLICY_DIGEST)).isEqualTo(kit.basePolicy.digest());
            assertThat(kit.hook.calls(ref.id(), Operation.START))
                    .as("the MutationHook is called with START and the backend id before the launch")
                    .extracting(KitMutationHook.Call::backendId)
                    .contains(stoppedBackendId);
        }

        @Test
        void required_stopWithAStaleExpectedGenerationStopsNothing() {
            SandboxRef ref = kit.newRef("stale-stop");
            kit.createRunning(ref);
            kit.restart(ref, 1);
            ResourceFacts current = kit.facts(ref.id());

            DriverException stale =
                    expectFailure(DriverErrorCode.FAILED_PRECONDITION, () -> kit.driver.stop(ref, OptionalLong.of(1)));
            assertThat(stale.mismatches()).contains(new Mismatch(Mismatch.GENERATION, "1", "2"));
            expectFailure(DriverErrorCode.FAILED_PRECONDITION, () -> kit.driver.stop(ref, OptionalLong.of(3)));
            kit.assertUntouched(current, "stop with another expected generation");

            assertThat(kit.driver.stop(ref, OptionalLong.of(2)).stoppedNow())
                    .as("stop with the current generation")
                    .isTrue();
        }

        @Test
        void required_deleteWithAStaleExpectedGenerationRemovesNothing() {
            SandboxRef ref = kit.newRef("stale-delete");
            kit.createRunning(ref);
            kit.restart(ref, 1);
            ResourceFacts current = kit.facts(ref.id());

            DriverException stale = expectFailure(
                    DriverErrorCode.FAILED_PRECONDITION, () -> kit.driver.delete(ref, OptionalLong.of(1)));
            assertThat(stale.mismatches()).contains(new Mismatch(Mismatch.GENERATION, "1", "2"));
            expectFailure(DriverErrorCode.FAILED_PRECONDITION, () -> kit.driver.delete(ref, OptionalLong.of(3)));
            kit.assertUntouched(current, "delete with another expected generation");

            assertThat(kit.driver.delete(ref, OptionalLong.of(2)).deleted())
                    .as("delete with the current generation")
                    .isTrue();
        }

        @Test
        void required_startWithAnOlderLaunchInputFailsBeforeAnyChange() {
            SandboxRef ref = kit.newRef("older-input");
            kit.createRunning(ref);
            kit.restart(ref, 1);
            kit.driver.stop(ref, OptionalLong.of(2));
            ResourceFacts stopped = kit.facts(ref.id());

            DriverException older =
                    expectFailure(DriverErrorCode.FAILED_PRECONDITION, () -> kit.start(ref, kit.launch(1)));

            assertThat(older.mismatches()).extracting(Mismatch::subject).contains(Mismatch.GENERATION);
            kit.assertUntouched(stopped, "start with an older launch input");
        }

        @Test
        void required_startOfAnotherGenerationWhileRunningFails() {
            SandboxRef ref = kit.newRef("running-other");
            kit.createRunning(ref);
            ResourceFacts running = kit.facts(ref.id());

            expectFailure(DriverErrorCode.FAILED_PRECONDITION, () -> kit.start(ref, kit.launch(2)));

            kit.assertUntouched(running, "start of generation 2 while generation 1 runs");
        }

        @Test
        void required_startAtTheSameGenerationWithAnotherPolicyFails() {
            SandboxRef ref = kit.newRef("same-generation-other-policy");
            kit.createRunning(ref);
            kit.driver.stop(ref, OptionalLong.of(1));
            ResourceFacts stopped = kit.facts(ref.id());

            expectFailure(DriverErrorCode.FAILED_PRECONDITION, () -> kit.start(ref, kit.launch(1, kit.otherPolicy)));

            kit.assertUntouched(stopped, "start of generation 1 with another policy digest");
        }

        @Test
        void required_startWithANewLaunchInputIsObservedOnTheResource() {
            Set<PolicyField> claimed = kit.capabilities.enforceablePolicyFields();
            SandboxRef ref = kit.newRef("new-input");
            LaunchPolicy first = LaunchPolicies.usingAll(claimed, 1);
            assertThat(kit.create(ref, kit.launch(1, first)).created()).isTrue();
            kit.awaitState(ref, SandboxState.RUNNING, 1);
            kit.driver.stop(ref, OptionalLong.of(1));

            if (kit.capabilities.launchPolicyOnStart()) {
                // The new input restricts every claimed field with other values than the first: the relaunch must
                // apply it, not the old input and not the backend's defaults.
                LaunchPolicy changed = LaunchPolicies.usingAll(claimed, 2, LaunchPolicies.Restrictions.ALTERNATE);
                assertThat(kit.start(ref, kit.launch(2, changed)).launched()).isTrue();
                assertObserved(kit.awaitState(ref, SandboxState.RUNNING, 2), ref, 2, changed.digest());
                BackendResource resource = kit.onlyResource(ref.id());
                assertThat(resource.stamp(Labels.GENERATION)).isEqualTo("2");
                assertThat(resource.stamp(Labels.POLICY_DIGEST)).isEqualTo(changed.digest());
                assertThat(resource.running()).isTrue();
                PolicyInForce.assertInForce(
                        changed,
                        kit.probe.appliedPolicy(ref),
                        claimed,
                        "after a start of generation 2 with another policy");

                // Every start applies its input, not only the first: generation 3, with the allow-list where the
                // driver claims it beside network none (which excludes it in the policies above), else the same.
                LaunchPolicy third = changed;
                if (claimed.contains(PolicyField.NETWORK_NONE) && claimed.contains(PolicyField.NETWORK_ALLOW_LIST)) {
                    Set<PolicyField> withAllowList = EnumSet.copyOf(claimed);
                    withAllowList.remove(PolicyField.NETWORK_NONE);
                    third = LaunchPolicies.usingAll(withAllowList, 3, LaunchPolicies.Restrictions.ALTERNATE);
                }
                kit.driver.stop(ref, OptionalLong.of(2));
                assertThat(kit.start(ref, kit.launch(3, third)).launched()).isTrue();
                assertObserved(kit.awaitState(ref, SandboxState.RUNNING, 3), ref, 3, third.digest());
                PolicyInForce.assertInForce(
                        third, kit.probe.appliedPolicy(ref), claimed, "after a start of generation 3");
            } else {
                // A "no" is checked too: a changed policy is refused cleanly, and the same policy still launches,
                // applied again.
                ResourceFacts stopped = kit.facts(ref.id());
                LaunchInput next = kit.launch(2, kit.otherPolicy);
                expectFailure(DriverErrorCode.UNSUPPORTED, () -> kit.start(ref, next));
                kit.assertUntouched(stopped, "start with another policy by a driver without launchPolicyOnStart");
                assertThat(kit.start(ref, kit.launch(2, first)).launched()).isTrue();
                assertObserved(kit.awaitState(ref, SandboxState.RUNNING, 2), ref, 2, first.digest());
                PolicyInForce.assertInForce(
                        first,
                        kit.probe.appliedPolicy(ref),
                        claimed,
                        "after a start of generation 2 with the same policy");
            }
        }

        @Test
        void required_workspaceDataSurvivesARestartWhenPersistent() {
            SandboxRef ref = kit.newRef("workspace");
            kit.createRunning(ref);
            String marker = "kit-marker-" + KitSession.randomHex(12);

            kit.probe.writeWorkspaceMarker(ref, marker);
            assertThat(kit.probe.readWorkspaceMarker(ref))
                    .as("the marker in the execution that wrote it")
                    .contains(marker);

            if (kit.capabilities.persistentWorkspace()) {
                kit.restart(ref, 1);
                assertThat(kit.probe.readWorkspaceMarker(ref))
                        .as("the marker written in generation 1, read in generation 2")
                        .contains(marker);
            }
        }
    }

    /**
     * The kit's MutationHook removes the sandbox's resource at the moment the driver announces the mutation and
     * plants another one in its place: with another id and the same name, or a new incarnation of the same id (for a
     * start, a stopped one, which a start by name would launch). The driver must not touch it, and must not report
     * success.
     */
    @Nested
    @DisplayName("A resource replaced between lookup and mutation is never touched")
    class ReplacementBetweenLookupAndMutation {
        @ParameterizedTest(name = "{0}")
        @EnumSource(Operation.class)
        void required_aSameNamedResourceWithAnotherIdIsNeverTouched(Operation operation) {
            KitScenarios.replacementIsNeverTouched(kit, operation, KitScenarios.Replacement.ANOTHER_ID_SAME_NAME, 2);
        }

        @ParameterizedTest(name = "{0}")
        @EnumSource(Operation.class)
        void required_aNewIncarnationOfTheSameIdIsNeverTouched(Operation operation) {
            KitScenarios.replacementIsNeverTouched(
                    kit, operation, KitScenarios.Replacement.NEW_INCARNATION_OF_THE_ID, 2);
        }

        @ParameterizedTest(name = "{0}")
        @EnumSource(KitScenarios.Replacement.class)
        void required_aRelaunchOfTheStoppedGenerationNeverTouchesAReplacement(KitScenarios.Replacement replacement) {
            KitScenarios.replacementIsNeverTouched(kit, Operation.START, replacement, 1);
        }
    }

    @Nested
    @DisplayName("Concurrency")
    class Concurrency {
        @Test
        void required_concurrentDuplicateDeletesReportAtMostOneDeletion() {
            SandboxRef ref = kit.newRef("delete-race");
            kit.createRunning(ref);

            List<Object> outcomes = runConcurrently(IntStream.range(0, 4)
                    .<Callable<Object>>mapToObj(i -> () -> kit.driver.delete(ref, OptionalLong.empty()))
                    .toList());

            assertThat(outcomes).as("every concurrent delete succeeds").allMatch(DeleteResult.class::isInstance);
            assertThat(outcomes)
                    .as("exactly one concurrent delete reports deleted == true")
                    .filteredOn(outcome -> ((DeleteResult) outcome).deleted())
                    .hasSize(1);
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.get(ref));
            kit.awaitNoResource(ref.id(), "after concurrent deletes");
        }

        @Test
        void required_racingStopStartAndDeleteEndInATruthfulState() {
            SandboxRef ref = kit.newRef("lifecycle-race");
            kit.createRunning(ref);

            List<Object> outcomes = runConcurrently(List.of(
                    () -> kit.driver.stop(ref, OptionalLong.empty()),
                    () -> kit.start(ref, kit.launch(2)),
                    () -> kit.driver.delete(ref, OptionalLong.empty()),
                    () -> kit.driver.stop(ref, OptionalLong.of(1))));

            for (Object outcome : outcomes) {
                if (outcome instanceof DriverException refused) {
                    assertThat(refused.code())
                            .as(
                                    "a racing call may only be refused as not found, failed precondition or aborted: %s",
                                    refused.getMessage())
                            .isIn(
                                    DriverErrorCode.NOT_FOUND,
                                    DriverErrorCode.FAILED_PRECONDITION,
                                    DriverErrorCode.ABORTED);
                }
            }
            Optional<SandboxObservation> settled = kit.awaitSettled(ref);
            if (settled.isEmpty()) {
                kit.awaitNoResource(ref.id(), "get answers NOT_FOUND after the race");
            } else {
                SandboxObservation observation = settled.get();
                BackendResource resource = kit.onlyResource(ref.id());
                assertThat(observation.ref()).isEqualTo(ref);
                assertThat(Long.toString(observation.generation()))
                        .as("get reports the generation stamped on the resource")
                        .isEqualTo(resource.stamp(Labels.GENERATION));
                assertThat(observation.state() == SandboxState.RUNNING)
                        .as(
                                "get reports %s while the backend says running == %s",
                                observation.state(), resource.running())
                        .isEqualTo(resource.running());
            }
        }

        /**
         * Starts {@code calls} together on their own threads and collects each outcome: its result, or the {@link
         * DriverException} it threw. Any other failure fails the test. Bounded by twice the readiness timeout.
         */
        private List<Object> runConcurrently(List<Callable<Object>> calls) {
            ExecutorService threads = Executors.newFixedThreadPool(calls.size());
            var ready = new CountDownLatch(calls.size());
            var go = new CountDownLatch(1);
            try {
                List<Future<Object>> futures = new ArrayList<>();
                for (Callable<Object> call : calls) {
                    futures.add(threads.submit(() -> {
                        ready.countDown();
                        go.await();
                        try {
                            return call.call();
                        } catch (DriverException refused) {
                            return refused;
                        }
                    }));
                }
                assertThat(ready.await(kit.timeout.toMillis(), TimeUnit.MILLISECONDS))
                        .isTrue();
                go.countDown();
                long deadline = System.nanoTime() + 2 * kit.timeout.toNanos();
                List<Object> outcomes = new ArrayList<>();
                for (Future<Object> future : futures) {
                    outcomes.add(future.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
                }
                return outcomes;
            } catch (ExecutionException e) {
                throw new AssertionError(
                        "a concurrent call failed with something other than a DriverException", e.getCause());
            } catch (TimeoutException e) {
                throw new AssertionError("concurrent calls did not finish within " + kit.timeout.multipliedBy(2), e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            } finally {
                threads.shutdownNow();
            }
        }
    }
}
