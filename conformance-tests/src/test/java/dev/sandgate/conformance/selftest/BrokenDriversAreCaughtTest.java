package dev.sandgate.conformance.selftest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.sandgate.conformance.selftest.broken.AllowListNotOnStartKit;
import dev.sandgate.conformance.selftest.broken.ClaimsFewerCapabilitiesKit;
import dev.sandgate.conformance.selftest.broken.CreateAdoptsANameHeldByAnotherIdKit;
import dev.sandgate.conformance.selftest.broken.CreateIgnoresIdentityKit;
import dev.sandgate.conformance.selftest.broken.DropsEmptyEnvironmentOnRestartKit;
import dev.sandgate.conformance.selftest.broken.DropsEnvironmentKit;
import dev.sandgate.conformance.selftest.broken.DropsOddEnvironmentOnPolicyChangeKit;
import dev.sandgate.conformance.selftest.broken.DuplicatesDeletedEventsKit;
import dev.sandgate.conformance.selftest.broken.IgnoresExpectedGenerationKit;
import dev.sandgate.conformance.selftest.broken.IgnoresPolicyKit;
import dev.sandgate.conformance.selftest.broken.IgnoresPolicyOnStartKit;
import dev.sandgate.conformance.selftest.broken.LeaksOnDeleteKit;
import dev.sandgate.conformance.selftest.broken.NameFallbackOnDeleteKit;
import dev.sandgate.conformance.selftest.broken.NeverCallsMutationHookKit;
import dev.sandgate.conformance.selftest.broken.NoPolicyOnRestartWithoutLaunchPolicyOnStartKit;
import dev.sandgate.conformance.selftest.broken.NonIdempotentStopKit;
import dev.sandgate.conformance.selftest.broken.PolicyOnlyOnTheFirstStartKit;
import dev.sandgate.conformance.selftest.broken.PolicyOnlyWithSeveralFieldsKit;
import dev.sandgate.conformance.selftest.broken.RegressesGenerationInWatchKit;
import dev.sandgate.conformance.selftest.broken.ReportsPermanentFailureAsTransientKit;
import dev.sandgate.conformance.selftest.broken.ReportsRestartsAsDeletionsKit;
import dev.sandgate.conformance.selftest.broken.RetriesOntoAReplacedResourceKit;
import dev.sandgate.conformance.selftest.broken.StartsByNameAfterCheckingTheIdKit;
import dev.sandgate.conformance.selftest.broken.StopActsByNameKit;
import dev.sandgate.conformance.selftest.broken.UserLabelsWinKit;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestDescriptor;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;

/**
 * Proves that the kit catches violations: each broken driver (the reference driver with one bug planted by a
 * decorator) runs the whole kit through EngineTestKit, and exactly the tests of the rule it breaks fail; every other
 * test passes and none is skipped.
 */
class BrokenDriversAreCaughtTest {
    private static final String LEAK_CHECK = "required_nothingTheKitCreatedSurvives";

    @Test
    void nameFallbackOnDeleteFailsTheAbsentIdAndNameReuseTests() {
        assertFails(
                NameFallbackOnDeleteKit.class,
                "required_deleteOfAnAbsentIdDeletesNothingEvenWhenTheNameExists",
                "required_operationsOnAnAbsentIdNeverTouchAForeignResourceWithTheSameName",
                "required_staleOperationsOfADeletedSandboxNeverTouchItsNameSuccessor",
                "required_aSameNamedResourceWithAnotherIdIsNeverTouched[DELETE]");
    }

    @Test
    void stopActingByNameFailsTheIdentityTestsOfStop() {
        assertFails(
                StopActsByNameKit.class,
                "required_stopWithAnotherNameOrWorkspaceFailsPreconditionAndStopsNothing",
                "required_stopOfAnAbsentIdIsNotFoundAndNeverStopsTheSameName",
                "required_operationsOnAnAbsentIdNeverTouchAForeignResourceWithTheSameName",
                "required_staleOperationsOfADeletedSandboxNeverTouchItsNameSuccessor");
    }

    @Test
    void createIgnoringTheIdentityOfAnExistingIdFailsTheCreateIdentityTest() {
        assertFails(
                CreateIgnoresIdentityKit.class,
                "required_createOfAnExistingIdWithAnotherNameOrWorkspaceFailsPreconditionAndChangesNothing");
    }

    @Test
    void nonIdempotentStopFailsTheStopIdempotencyTest() {
        assertFails(NonIdempotentStopKit.class, "required_stopOfAStoppedSandboxSucceedsWithoutStopping");
    }

    @Test
    void ignoringTheExpectedGenerationFailsTheStaleGenerationTests() {
        assertFails(
                IgnoresExpectedGenerationKit.class,
                "required_stopWithAStaleExpectedGenerationStopsNothing",
                "required_deleteWithAStaleExpectedGenerationRemovesNothing");
    }

    @Test
    void leakingResourcesFailsTheDeletionTestsAndTheAfterClassCheck() {
        assertFails(
                LeaksOnDeleteKit.class,
                "required_deleteRemovesEveryResourceOfTheSandbox",
                "required_deleteTwiceDeletesOnce",
                "required_longestLegalWorkspaceAndNameRoundTrip",
                "required_concurrentDuplicateDeletesReportAtMostOneDeletion",
                "required_racingStopStartAndDeleteEndInATruthfulState",
                "required_staleOperationsOfADeletedSandboxNeverTouchItsNameSuccessor",
                LEAK_CHECK);
    }

    @Test
    void neverCallingTheMutationHookFailsTheReplacementAndHookTests() {
        assertFails(
                NeverCallsMutationHookKit.class,
                "required_aNewIncarnationOfTheSameIdIsNeverTouched[STOP]",
                "required_aNewIncarnationOfTheSameIdIsNeverTouched[START]",
                "required_aNewIncarnationOfTheSameIdIsNeverTouched[DELETE]",
                "required_aSameNamedResourceWithAnotherIdIsNeverTouched[STOP]",
                "required_aSameNamedResourceWithAnotherIdIsNeverTouched[START]",
                "required_aSameNamedResourceWithAnotherIdIsNeverTouched[DELETE]",
                "required_aRelaunchOfTheStoppedGenerationNeverTouchesAReplacement[ANOTHER_ID_SAME_NAME]",
                "required_aRelaunchOfTheStoppedGenerationNeverTouchesAReplacement[NEW_INCARNATION_OF_THE_ID]",
                "required_stopStopsTheExecutionAndKeepsTheSandbox",
                "required_deleteRemovesEveryResourceOfTheSandbox",
                "required_startAtTheSameGenerationRelaunchesAStoppedSandbox");
    }

    @Test
    void retryingOntoAReplacedResourceFailsTheNewIncarnationTests() {
        // The START races plant a stopped replacement, which the retried start would launch.
        assertFails(
                RetriesOntoAReplacedResourceKit.class,
                "required_aNewIncarnationOfTheSameIdIsNeverTouched[STOP]",
                "required_aNewIncarnationOfTheSameIdIsNeverTouched[START]",
                "required_aNewIncarnationOfTheSameIdIsNeverTouched[DELETE]",
                "required_aRelaunchOfTheStoppedGenerationNeverTouchesAReplacement[NEW_INCARNATION_OF_THE_ID]");
    }

    @Test
    void aStartThatChecksTheIdThenLaunchesByNameFailsTheStartRaceTests() {
        assertFails(
                StartsByNameAfterCheckingTheIdKit.class,
                "required_aSameNamedResourceWithAnotherIdIsNeverTouched[START]",
                "required_aNewIncarnationOfTheSameIdIsNeverTouched[START]",
                "required_aRelaunchOfTheStoppedGenerationNeverTouchesAReplacement[ANOTHER_ID_SAME_NAME]",
                "required_aRelaunchOfTheStoppedGenerationNeverTouchesAReplacement[NEW_INCARNATION_OF_THE_ID]");
    }

    @Test
    void aCreateThatAdoptsANameHeldByAnotherIdFailsTheHeldNameTest() {
        assertFails(
                CreateAdoptsANameHeldByAnotherIdKit.class,
                "required_createOfANewIdWhoseNameAnotherIdHoldsFailsPreconditionAndTouchesNothing");
    }

    @Test
    void userLabelsWinningOverManagedStampsFailsTheSpoofingTest() {
        assertFails(UserLabelsWinKit.class, "required_managedStampsWinOverSpoofingUserLabels");
    }

    @Test
    void duplicateDeletedEventsFailTheExactlyOnceTest() {
        assertFails(DuplicatesDeletedEventsKit.class, "required_eachDeletionIsDeliveredExactlyOnce");
    }

    @Test
    void restartsReportedAsDeletionsFailTheRestartWatchTest() {
        assertFails(ReportsRestartsAsDeletionsKit.class, "required_stopAndStartAreNeverReportedAsDeletions");
    }

    @Test
    void aRegressingGenerationInWatchFailsTheRestartOrderTest() {
        assertFails(
                RegressesGenerationInWatchKit.class,
                "required_noSnapshotOfAnOlderGenerationFollowsANewerOneAfterARestart");
    }

    @Test
    void claimingFewerCapabilitiesThanRefusedFailsTheUnsupportedFieldTest() {
        assertFails(
                ClaimsFewerCapabilitiesKit.class,
                "required_unenforceablePolicyFieldsAreRefusedBeforeAnyResourceExists");
    }

    @Test
    void aDriverThatClaimsPolicyFieldsItDoesNotApplyFailsTheInForceTests() {
        assertFails(
                IgnoresPolicyKit.class,
                "required_aPolicyUsingEveryEnforceableFieldIsLaunchedAndInForce",
                "required_eachClaimedFieldAloneIsInForce",
                "required_startWithANewLaunchInputIsObservedOnTheResource");
    }

    @Test
    void aStartThatRelaunchesWithoutTheNewPolicyFailsTheNewLaunchInputTest() {
        assertFails(IgnoresPolicyOnStartKit.class, "required_startWithANewLaunchInputIsObservedOnTheResource");
    }

    @Test
    void aPolicyAppliedOnlyAtTheFirstStartsFailsTheNewLaunchInputTest() {
        assertFails(PolicyOnlyOnTheFirstStartKit.class, "required_startWithANewLaunchInputIsObservedOnTheResource");
    }

    @Test
    void aRelaunchWithoutThePolicyByADriverWithoutLaunchPolicyOnStartFailsTheNewLaunchInputTest() {
        assertFails(
                NoPolicyOnRestartWithoutLaunchPolicyOnStartKit.class,
                "required_startWithANewLaunchInputIsObservedOnTheResource");
    }

    @Test
    void aPolicyUsingOneFieldLaunchedUnrestrictedFailsTheFieldAloneTest() {
        assertFails(PolicyOnlyWithSeveralFieldsKit.class, "required_eachClaimedFieldAloneIsInForce");
    }

    @Test
    void anAllowListDroppedAtAStartFailsTheNewLaunchInputTest() {
        assertFails(AllowListNotOnStartKit.class, "required_startWithANewLaunchInputIsObservedOnTheResource");
    }

    @Test
    void aDriverThatLaunchesWithoutTheEnvironmentFailsTheEnvironmentTest() {
        assertFails(DropsEnvironmentKit.class, "required_theSpecsEnvironmentReachesEveryExecutionUnchanged");
    }

    @Test
    void variablesLostAtAStartWithAnotherPolicyFailTheEnvironmentTest() {
        assertFails(
                DropsOddEnvironmentOnPolicyChangeKit.class,
                "required_theSpecsEnvironmentReachesEveryExecutionUnchanged");
    }

    @Test
    void emptyVariablesLostAtEveryStartFailTheEnvironmentTest() {
        assertFails(
                DropsEmptyEnvironmentOnRestartKit.class, "required_theSpecsEnvironmentReachesEveryExecutionUnchanged");
    }

    @Test
    void aPermanentCreateFailureReportedAsTransientFailsThePermanentFailureTest() {
        assertFails(
                ReportsPermanentFailureAsTransientKit.class,
                "required_aCreateTheBackendRefusesForGoodFailsPermanentlyAndCanBeDeleted");
    }

    /** Runs the whole kit against {@code brokenKit} and asserts that exactly {@code expected} failed. */
    static void assertFails(Class<?> brokenKit, String... expected) {
        EngineExecutionResults results = EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(brokenKit))
                .execute();

        Set<String> failed = new TreeSet<>();
        results.testEvents().failed().stream()
                .map(event -> testName(event.getTestDescriptor()))
                .forEach(failed::add);
        results.containerEvents().failed().stream()
                .filter(event -> event.getTestDescriptor().getSource().orElse(null) instanceof ClassSource source
                        && source.getClassName().equals(brokenKit.getName()))
                .forEach(event -> failed.add(LEAK_CHECK));
        assertThat(failed)
                .as("the kit tests that fail against %s", brokenKit.getSimpleName())
                .containsExactlyInAnyOrder(expected);
        assertThat(results.testEvents().skipped().count()
                        + results.testEvents().aborted().count())
                .as("skipped or aborted kit tests")
                .isZero();
        assertThat(results.testEvents().succeeded().count())
                .as("kit tests that pass against %s", brokenKit.getSimpleName())
                .isPositive();
        assertThat(results.containerEvents().failed().stream()
                        .map(event -> event.getTestDescriptor().getDisplayName())
                        .collect(Collectors.toSet()))
                .as("failed containers other than the class itself")
                .allMatch(name -> name.equals(brokenKit.getSimpleName()));
    }

    /** The test method's name, with the invocation's display name for a parameterized test ({@code m[STOP]}). */
    private static String testName(TestDescriptor descriptor) {
        String method = methodName(descriptor).orElse(descriptor.getUniqueId().toString());
        Optional<String> parentMethod = descriptor.getParent().flatMap(BrokenDriversAreCaughtTest::methodName);
        return parentMethod.isPresent() ? method + "[" + descriptor.getDisplayName() + "]" : method;
    }

    private static Optional<String> methodName(TestDescriptor descriptor) {
        return descriptor
                .getSource()
                .filter(MethodSource.class::isInstance)
                .map(source -> ((MethodSource) source).getMethodName());
    }
}
