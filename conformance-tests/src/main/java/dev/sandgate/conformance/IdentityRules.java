package dev.sandgate.conformance;

import static dev.sandgate.conformance.KitAssertions.assertObserved;
import static dev.sandgate.conformance.KitAssertions.expectFailure;
import static dev.sandgate.conformance.KitAssertions.withLabels;
import static dev.sandgate.conformance.KitSession.sameNameNewId;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.function.Executable;

/**
 * Identity rules: identifiers are checked before anything reaches a backend; the sandbox id is authoritative and a
 * workspace and name only locate it; an absent id never falls back to a resource with the same name; names are reused
 * without a deleted sandbox's operations reaching its successor; user labels never override the managed stamps.
 */
abstract class IdentityRules extends KitBase {

    @Nested
    @DisplayName("Identifiers")
    class IdentifierSyntax {
        @Test
        void required_emptyOrInvalidIdentifiersAreRefusedNamingTheField() {
            String id = Identifiers.newSandboxId();
            String workspace = KitSession.WORKSPACE;
            String name = "valid-name";
            Map<String, List<Executable>> refusals = Map.of(
                    "ref.id",
                    List.of(
                            () -> new SandboxRef(null, workspace, name),
                            () -> new SandboxRef("", workspace, name),
                            () -> new SandboxRef("not-a-uuid", workspace, name),
                            () -> new SandboxRef(id.toUpperCase(Locale.ROOT), workspace, name)),
                    "ref.workspace",
                    List.of(
                            () -> new SandboxRef(id, null, name),
                            () -> new SandboxRef(id, "", name),
                            () -> new SandboxRef(id, "Upper", name),
                            () -> new SandboxRef(id, "-leading", name),
                            () -> new SandboxRef(id, "a".repeat(64), name)),
                    "ref.name",
                    List.of(
                            () -> new SandboxRef(id, workspace, ""),
                            () -> new SandboxRef(id, workspace, "trailing-"),
                            () -> new SandboxRef(id, workspace, "under_score"),
                            () -> new SandboxRef(id, workspace, "dot.ted"),
                            () -> new SandboxRef(id, workspace, "n".repeat(64))));
            refusals.forEach((field, attempts) -> {
                for (Executable attempt : attempts) {
                    DriverException refused = expectFailure(DriverErrorCode.INVALID_ARGUMENT, attempt);
                    assertThat(refused.getMessage())
                            .as("the refusal names the field")
                            .startsWith(field + ":");
                }
            });
        }

        @Test
        void required_longestLegalWorkspaceAndNameRoundTrip() {
            String workspace = "w" + KitSession.randomHex(6) + "-" + "w".repeat(55);
            String name = "n" + KitSession.randomHex(6) + "-" + "n".repeat(55);
            var ref = new SandboxRef(Identifiers.newSandboxId(), workspace, name);
            assertThat(workspace).hasSize(Identifiers.MAX_LABEL_LENGTH);
            assertThat(name).hasSize(Identifiers.MAX_LABEL_LENGTH);

            kit.createRunning(ref);

            assertThat(kit.driver.get(ref).ref()).isEqualTo(ref);
            assertThat(kit.driver.list()).extracting(SandboxObservation::ref).contains(ref);
            BackendResource resource = kit.onlyResource(ref.id());
            assertThat(resource.stamp(Labels.WORKSPACE)).isEqualTo(workspace);
            assertThat(resource.stamp(Labels.NAME)).isEqualTo(name);
            assertThat(kit.driver.delete(ref, OptionalLong.empty()).deleted()).isTrue();
            kit.awaitNoResource(ref.id(), "after delete");
        }
    }

    /**
     * One running sandbox and one planted same-named foreign resource serve the whole group: every test here must
     * leave them untouched. If a broken driver damages them, the next test gets fresh ones.
     */
    @Nested
    @DisplayName("The id is authoritative; a name is only a locator")
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    class IdentityIsAuthoritative {
        private SandboxRef alpha;
        private ResourceFacts alphaFacts;
        private SandboxRef foreign;
        private ResourceFacts foreignFacts;

        @BeforeEach
        void ensureIntactFixtures() {
            if (alpha == null || !intact(alphaFacts)) {
                if (alpha != null) {
                    kit.deleteThroughDriver(alpha);
                    kit.probe.remove(alpha.id());
                }
                alpha = kit.newRef("alpha");
                kit.createFixture(alpha);
                alphaFacts = kit.facts(alpha.id());
            }
            if (foreign == null || !intact(foreignFacts)) {
                if (foreign != null) {
                    kit.probe.remove(foreign.id());
                }
                foreign = kit.newRef("foreign");
                foreignFacts = ResourceFacts.of(kit.plantFixture(foreign, kit.gatewayId, kit.basePolicy.digest()));
            }
        }

        @AfterAll
        void removeFixtures() {
            if (alpha != null) {
                kit.deleteThroughDriver(alpha);
            }
            if (foreign != null) {
                kit.probe.remove(foreign.id());
            }
        }

        private boolean intact(ResourceFacts facts) {
            List<BackendResource> now = kit.probe.resources(facts.sandboxId());
            return now.size() == 1 && ResourceFacts.of(now.get(0)).equals(facts);
        }

        private List<SandboxRef> misnamed() {
            return List.of(
                    new SandboxRef(alpha.id(), alpha.workspace(), "not-" + alpha.name()),
                    new SandboxRef(alpha.id(), KitSession.OTHER_WORKSPACE, alpha.name()));
        }

        private void assertIdentityMismatch(DriverException refused, SandboxRef asked) {
            if (!asked.name().equals(alpha.name())) {
                assertThat(refused.mismatches()).contains(new Mismatch(Mismatch.NAME, asked.name(), alpha.name()));
            }
            if (!asked.workspace().equals(alpha.workspace())) {
                assertThat(refused.mismatches())
                        .contains(new Mismatch(Mismatch.WORKSPACE, asked.workspace(), alpha.workspace()));
            }
        }

        @Test
        void required_getWithAnotherNameOrWorkspaceFailsPrecondition() {
            for (SandboxRef asked : misnamed()) {
                assertIdentityMismatch(
                        expectFailure(DriverErrorCode.FAILED_PRECONDITION, () -> kit.driver.get(asked)), asked);
            }
            kit.assertUntouched(alphaFacts, "get with a mismatched name");
        }

        @Test
        void required_createOfAnExistingIdWithAnotherNameOrWorkspaceFailsPreconditionAndChangesNothing() {
            for (SandboxRef asked : misnamed()) {
                assertIdentityMismatch(
                        expectFailure(
                                DriverErrorCode.FAILED_PRECONDITION,
                                () -> kit.driver.create(asked, kit.spec, kit.launch(1))),
                        asked);
            }
            kit.assertUntouched(alphaFacts, "create with a mismatched name");
        }

        @Test
        void required_createOfANewIdWhoseNameAnotherIdHoldsFailsPreconditionAndTouchesNothing() {
            KitScenarios.createOfANameHeldByAnotherIdFailsPrecondition(kit);
        }

        @Test
        void required_stopWithAnotherNameOrWorkspaceFailsPreconditionAndStopsNothing() {
            for (SandboxRef asked : misnamed()) {
                assertIdentityMismatch(
                        expectFailure(
                                DriverErrorCode.FAILED_PRECONDITION,
                                () -> kit.driver.stop(asked, OptionalLong.empty())),
                        asked);
            }
            kit.assertUntouched(alphaFacts, "stop with a mismatched name");
        }

        @Test
        void required_startWithAnotherNameOrWorkspaceFailsPreconditionAndLaunchesNothing() {
            for (SandboxRef asked : misnamed()) {
                assertIdentityMismatch(
                        expectFailure(DriverErrorCode.FAILED_PRECONDITION, () -> kit.start(asked, kit.launch(1))),
                        asked);
            }
            kit.assertUntouched(alphaFacts, "start with a mismatched name");
        }

        @Test
        void required_deleteWithAnotherNameOrWorkspaceFailsPreconditionAndRemovesNothing() {
            for (SandboxRef asked : misnamed()) {
                assertIdentityMismatch(
                        expectFailure(
                                DriverErrorCode.FAILED_PRECONDITION,
                                () -> kit.driver.delete(asked, OptionalLong.empty())),
                        asked);
            }
            kit.assertUntouched(alphaFacts, "delete with a mismatched name");
        }

        @Test
        void required_getOfAnAbsentIdIsNotFoundEvenWhenTheNameExists() {
            SandboxRef absent = sameNameNewId(alpha);
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.get(absent));
            kit.assertUntouched(alphaFacts, "get of an absent id");
        }

        @Test
        void required_stopOfAnAbsentIdIsNotFoundAndNeverStopsTheSameName() {
            SandboxRef absent = sameNameNewId(alpha);
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.stop(absent, OptionalLong.empty()));
            kit.assertUntouched(alphaFacts, "stop of an absent id");
        }

        @Test
        void required_startOfAnAbsentIdIsNotFoundAndNeverStartsTheSameName() {
            SandboxRef absent = sameNameNewId(alpha);
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.start(absent, kit.launch(1)));
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.start(absent, kit.launch(2)));
            kit.assertUntouched(alphaFacts, "start of an absent id");
        }

        @Test
        void required_deleteOfAnAbsentIdDeletesNothingEvenWhenTheNameExists() {
            SandboxRef absent = sameNameNewId(alpha);
            assertThat(kit.driver.delete(absent, OptionalLong.empty()).deleted())
                    .as("delete of an absent id answers deleted == false")
                    .isFalse();
            kit.assertUntouched(alphaFacts, "delete of an absent id");
        }

        @Test
        void required_operationsOnAnAbsentIdNeverTouchAForeignResourceWithTheSameName() {
            SandboxRef absent = sameNameNewId(foreign);
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.get(absent));
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.stop(absent, OptionalLong.empty()));
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.start(absent, kit.launch(1)));
            assertThat(kit.driver.delete(absent, OptionalLong.empty()).deleted())
                    .isFalse();
            kit.assertUntouched(foreignFacts, "operations on an absent id with a foreign resource's name");
        }

        @Test
        void required_listShowsAForeignResourceUnderItsOwnId() {
            assertThat(kit.driver.list())
                    .filteredOn(observation -> observation.ref().workspace().equals(foreign.workspace())
                            && observation.ref().name().equals(foreign.name()))
                    .extracting(SandboxObservation::ref)
                    .containsExactly(foreign);
        }

        @Test
        void required_resourcesOfAnotherGatewayAreInvisible() {
            SandboxRef other = kit.newRef("other-gateway");
            ResourceFacts otherFacts =
                    ResourceFacts.of(kit.plant(other, kit.foreignGatewayId, kit.basePolicy.digest()));

            assertThat(kit.driver.list())
                    .noneMatch(observation -> observation.ref().id().equals(other.id()));
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.get(other));
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.stop(other, OptionalLong.empty()));
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.start(other, kit.launch(1)));
            assertThat(kit.driver.delete(other, OptionalLong.empty()).deleted()).isFalse();
            kit.assertUntouched(otherFacts, "operations on another gateway's resource");
        }
    }

    @Nested
    @DisplayName("Names are reused; operations of a deleted sandbox never reach its successor")
    class NameReuse {
        @Test
        void required_sameNameInTwoWorkspacesAreIndependent() {
            String name = "twin-" + KitSession.randomHex(6);
            var first = new SandboxRef(Identifiers.newSandboxId(), KitSession.WORKSPACE, name);
            var second = new SandboxRef(Identifiers.newSandboxId(), KitSession.OTHER_WORKSPACE, name);
            kit.createRunning(first);
            kit.createRunning(second);
            assertThat(kit.driver.get(first).ref()).isEqualTo(first);
            assertThat(kit.driver.get(second).ref()).isEqualTo(second);
            ResourceFacts firstFacts = kit.facts(first.id());

            assertThat(kit.driver.stop(second, OptionalLong.empty()).stoppedNow())
                    .isTrue();
            kit.assertUntouched(firstFacts, "stop of the same name in another workspace");
            assertThat(kit.driver.delete(second, OptionalLong.empty()).deleted())
                    .isTrue();

            kit.assertUntouched(firstFacts, "delete of the same name in another workspace");
            assertThat(kit.driver.get(first).state()).isEqualTo(SandboxState.RUNNING);
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.get(second));
        }

        @Test
        void required_staleOperationsOfADeletedSandboxNeverTouchItsNameSuccessor() {
            SandboxRef first = kit.newRef("reused");
            kit.createRunning(first);
            assertThat(kit.driver.delete(first, OptionalLong.empty()).deleted()).isTrue();
            kit.awaitNoResource(first.id(), "after delete");
            SandboxRef successor = sameNameNewId(first);
            kit.createRunning(successor);
            ResourceFacts successorFacts = kit.facts(successor.id());

            // Replays of the first sandbox's requests, with the generation it had (which the successor has too).
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.stop(first, OptionalLong.of(1)));
            assertThat(kit.driver.delete(first, OptionalLong.of(1)).deleted()).isFalse();
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.start(first, kit.launch(1)));
            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.get(first));

            kit.assertUntouched(successorFacts, "stale operations of the name's previous sandbox");
            assertThat(kit.driver.get(successor).ref()).isEqualTo(successor);
        }
    }

    @Nested
    @DisplayName("Managed stamps win over user labels")
    class LabelSpoofing {
        @Test
        void required_managedStampsWinOverSpoofingUserLabels() {
            SandboxRef victim = kit.newRef("victim");
            kit.createRunning(victim);
            SandboxRef spoofer = kit.newRef("spoofer");
            Map<String, String> spoofing = Map.of(
                    Labels.SANDBOX_ID,
                    victim.id(),
                    Labels.WORKSPACE,
                    "spoofed-workspace",
                    Labels.NAME,
                    victim.name(),
                    Labels.GENERATION,
                    "99",
                    Labels.GATEWAY_ID,
                    kit.foreignGatewayId,
                    Labels.MANAGED_BY,
                    "someone-else",
                    "team",
                    "blue");

            kit.create(spoofer, withLabels(kit.spec, spoofing), kit.launch(1));
            // Checked before waiting for it to run: a driver whose user labels won cannot find it by its id.
            assertThat(kit.probe.resources(victim.id()))
                    .as("resources carrying the victim's sandbox id after a create whose user labels claim it: the"
                            + " spoofer's resource must carry its own id (managed stamps are applied last)")
                    .hasSize(1);
            kit.awaitState(spoofer, SandboxState.RUNNING, 1);

            BackendResource resource = kit.onlyResource(spoofer.id());
            assertThat(resource.stamps())
                    .containsEntry(Labels.SANDBOX_ID, spoofer.id())
                    .containsEntry(Labels.WORKSPACE, spoofer.workspace())
                    .containsEntry(Labels.NAME, spoofer.name())
                    .containsEntry(Labels.GENERATION, "1")
                    .containsEntry(Labels.GATEWAY_ID, kit.gatewayId)
                    .containsEntry(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE)
                    .containsEntry("team", "blue");
            assertThat(kit.probe.resources(victim.id()))
                    .as("only the victim's own resource carries its id")
                    .extracting(BackendResource::backendId)
                    .doesNotContain(resource.backendId())
                    .hasSize(1);
            SandboxObservation spooferSeen = kit.driver.get(spoofer);
            assertObserved(spooferSeen, spoofer, 1, kit.basePolicy.digest());
            assertThat(spooferSeen.labels()).containsEntry("team", "blue");
            assertThat(spooferSeen.labels().keySet())
                    .as("observed labels are the user labels, managed keys removed")
                    .noneMatch(Labels::isReserved);
            assertThat(kit.driver.get(victim).ref()).isEqualTo(victim);
            assertThat(kit.driver.list())
                    .extracting(SandboxObservation::ref)
                    .filteredOn(ref -> ref.id().equals(victim.id()) || ref.id().equals(spoofer.id()))
                    .containsExactlyInAnyOrder(victim, spoofer);
        }
    }
}
