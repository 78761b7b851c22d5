package dev.sandgate.conformance;

import static dev.sandgate.conformance.KitSession.sameNameNewId;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverConfig;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.MutationHook.Operation;
import dev.sandgate.spi.PolicyField;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.StartResult;
import dev.sandgate.spi.StaticPolicy;
import dev.sandgate.spi.StopResult;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.ClassOrderer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestClassOrder;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The conformance kit every compute driver passes, ours and third parties'. A driver's test extends this class and
 * answers six hooks; every scenario is inherited. About fifteen lines:
 *
 * <pre>{@code
 * class MyDriverConformanceTest extends ComputeDriverConformanceTest {
 *     protected ComputeDriverProvider provider() { return new MyDriverProvider(); }
 *     protected DriverConfig config() { return DriverConfig.EMPTY.with("my.endpoint", "unix:///run/my.sock"); }
 *     protected BackendProbe probe() { return new MyBackendProbe(); }
 *     protected SandboxSpec runningSpec() { return SandboxSpec.ofImage("localhost/sleeper:1"); }
 *     protected SandboxSpec permanentlyRefusedSpec() { return SandboxSpec.ofImage("127.0.0.1:1/absent:1"); }
 * }
 * }</pre>
 *
 * <h2>How a run goes</h2>
 *
 * <ul>
 *   <li>The hooks are called once per test class. The kit first asks {@link ComputeDriverProvider#availability}: a
 *       driver that is not available skips the class with the reason, or fails it when the system property {@code
 *       sandgate.requireEngines} is {@code true} (CI sets it).
 *   <li>Each class uses a fresh gateway id ({@code kit-} and 8 hex digits) and creates its driver through {@code
 *       provider().create(config(), context)} with a {@link dev.sandgate.spi.MutationHook} the kit controls. Foreign
 *       resources of "another gateway" are planted under {@code <gateway id>-foreign}.
 *   <li>Each test deletes, through the driver, what it created. The last test ({@code
 *       required_nothingTheKitCreatedSurvives}, ordered after every other group) asserts that no resource stamped
 *       with the class's gateway id survives ({@link BackendProbe#resourcesOfGateway}) and removes leftovers through
 *       the probe; after the class the kit prints how many launches the run took (creates and starts that launched) so
 *       that authors of slow backends can budget: the whole kit takes about 70 launches plus about 15 planted
 *       resources.
 *   <li>Tests are named for the rule they check and its strength ({@code required_...}, in the spirit of the Reactive
 *       Streams TCK). Capabilities a driver lacks are checked too: a "no" must be a clean {@link
 *       DriverErrorCode#UNSUPPORTED}. No test is skipped.
 * </ul>
 *
 * <h2>What the kit expects of a driver beyond the SPI's Javadoc</h2>
 *
 * <ul>
 *   <li>The {@link dev.sandgate.spi.MutationHook} is called with {@code STOP}, {@code START} or {@code DELETE} before
 *       the driver mutates a resolved resource, with the same backend id that {@link BackendProbe} reports as {@link
 *       BackendResource#backendId()}; after the hook returns, the driver mutates that backend id only, and a resource
 *       replaced meanwhile (same id or same name, new backend id) is left alone and the call fails (any {@link
 *       DriverException}; a delete may instead answer {@code deleted == false} when nothing carries the id).
 *   <li>{@code stop} returns once the backend reports the execution stopped; {@code delete} returns once the backend
 *       removed the resources (the kit allows {@link #readinessTimeout()} for the probe to see them gone).
 * </ul>
 *
 * <p>Subclasses may add their own tests; {@link #gatewayId()} and {@link #launchCount()} are available to them.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestClassOrder(ClassOrderer.OrderAnnotation.class)
public abstract class ComputeDriverConformanceTest {
    private KitSession kit;

    /** The provider under test, as ServiceLoader would find it. */
    protected abstract ComputeDriverProvider provider();

    /** The settings to create the driver with (the same for every driver instance of the class). */
    protected abstract DriverConfig config();

    /** Out-of-band access to the backend the driver uses. Called once per test class and closed after it. */
    protected abstract BackendProbe probe();

    /**
     * A spec whose execution keeps running until it is stopped (a container whose process sleeps, a VM image). Its
     * workspace must be writable through {@link BackendProbe#writeWorkspaceMarker}.
     */
    protected abstract SandboxSpec runningSpec();

    /**
     * A spec that passes {@link ComputeDriver#validate} syntax but that the backend will refuse for good when the
     * driver tries to launch it: an image the backend does not have and cannot get (for an engine, a reference on a
     * loopback registry nothing listens on, such as {@code 127.0.0.1:1/absent:1}), an object the API server rejects.
     * The driver must report that refusal as permanent ({@link DriverErrorCode#isTransient()} false) or as a FAILED
     * sandbox, within {@link #readinessTimeout()}: never as a transient failure, and never by retrying forever.
     */
    protected abstract SandboxSpec permanentlyRefusedSpec();

    /** How long a launched sandbox may take to be reported RUNNING (and a deleted one to vanish from the probe). */
    protected Duration readinessTimeout() {
        return Duration.ofSeconds(60);
    }

    /** The gateway id of this class's run. */
    protected final String gatewayId() {
        return kit.gatewayId;
    }

    /** Creates and starts of this class's run that launched an execution, so far. */
    protected final int launchCount() {
        return kit.launches();
    }

    @BeforeAll
    final void startConformanceKit() {
        kit = KitSession.start(
                getClass().getName(), provider(), config(), this::probe, runningSpec(), readinessTimeout());
    }

    @AfterEach
    final void cleanUpConformanceTest() {
        if (kit != null) {
            kit.cleanUpTest();
        }
    }

    @AfterAll
    final void finishConformanceKit() {
        if (kit != null) {
            kit.finish();
        }
    }

    /** Runs after every other group (the highest order), so that the leak check is a test with a name in reports. */
    @Nested
    @Order(Integer.MAX_VALUE)
    @DisplayName("After every other group")
    class AfterEveryOtherGroup {
        @Test
        void required_nothingTheKitCreatedSurvives() {
            kit.assertNothingSurvives();
        }
    }

    @Nested
    @DisplayName("The provider")
    class Provider {
        @Test
        void required_providerIsRegisteredWithServiceLoader() {
            ComputeDriverProvider provider = kit.provider;
            assertThat(provider.name()).as("provider name").matches("[a-z][a-z0-9-]*");
            List<String> registered =
                    ServiceLoader.load(
                                    ComputeDriverProvider.class,
                                    provider.getClass().getClassLoader())
                            .stream()
                            .map(found -> found.get().name())
                            .toList();
            assertThat(registered)
                    .as("names of the providers listed in META-INF/services/%s", ComputeDriverProvider.class.getName())
                    .contains(provider.name());
        }
    }

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
                    DriverException refused = expectFailure(DriverErrorCode.INVALID_ARGUMENT, attempt::execute);
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

    @Nested
    @DisplayName("Launch policy")
    class LaunchPolicyChecks {
        @Test
        void required_malformedPolicyDigestIsRefused() {
            byte[] document = LaunchPolicies.canonicalDocument(1, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY);
            String hex = LaunchPolicy.digestOf(document).substring("sha256:".length());
            for (String malformed : List.of(
                    "",
                    "sha256:",
                    "sha256:" + hex.toUpperCase(Locale.ROOT),
                    "sha256:" + hex.substring(1),
                    "SHA256:" + hex,
                    "sha512:" + hex,
                    " sha256:" + hex)) {
                DriverException refused = expectFailure(
                        DriverErrorCode.INVALID_ARGUMENT,
                        () -> new LaunchPolicy(1, malformed, document, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY));
                assertThat(refused.getMessage()).startsWith("policy.digest:");
            }
        }

        @Test
        void required_digestNotMatchingTheDocumentIsRefused() {
            byte[] document = LaunchPolicies.canonicalDocument(1, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY);
            String otherDigest = LaunchPolicy.digestOf("{}".getBytes(StandardCharsets.UTF_8));

            DriverException refused = expectFailure(
                    DriverErrorCode.INVALID_ARGUMENT,
                    () -> new LaunchPolicy(1, otherDigest, document, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY));

            assertThat(refused.getMessage()).startsWith("policy.digest:");
        }

        @Test
        void required_unenforceablePolicyFieldsAreRefusedBeforeAnyResourceExists() {
            Set<PolicyField> enforceable = kit.capabilities.enforceablePolicyFields();
            SandboxRef stopped = null;
            ResourceFacts stoppedFacts = null;
            for (PolicyField field : PolicyField.values()) {
                LaunchPolicy policy = LaunchPolicies.usingOnly(field, 1);
                assertThat(policy.usedFields()).containsExactly(field);
                if (enforceable.contains(field)) {
                    kit.driver.validate(kit.spec, kit.launch(1, policy));
                    continue;
                }
                expectFailure(DriverErrorCode.UNSUPPORTED, () -> kit.driver.validate(kit.spec, kit.launch(1, policy)));
                SandboxRef refused = kit.newRef("unsupported");
                expectFailure(DriverErrorCode.UNSUPPORTED, () -> kit.create(refused, kit.launch(1, policy)));
                assertThat(kit.probe.resources(refused.id()))
                        .as("no resource exists after a create using %s", field)
                        .isEmpty();
                expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.driver.get(refused));

                if (stopped == null) {
                    stopped = kit.newRef("unsupported-start");
                    kit.createRunning(stopped);
                    kit.driver.stop(stopped, OptionalLong.of(1));
                    stoppedFacts = kit.facts(stopped.id());
                }
                SandboxRef target = stopped;
                LaunchPolicy next = LaunchPolicies.usingOnly(field, 2);
                expectFailure(DriverErrorCode.UNSUPPORTED, () -> kit.start(target, kit.launch(2, next)));
                kit.assertUntouched(stoppedFacts, "start with a policy using " + field);
            }
        }

        @Test
        void required_eachClaimedFieldAloneIsInForce() {
            // A policy using one field, as the gateway's default (network none and nothing else) does, is applied as
            // surely as one using them all.
            Set<PolicyField> claimed = kit.capabilities.enforceablePolicyFields();
            for (PolicyField field : claimed) {
                LaunchPolicy policy = LaunchPolicies.usingOnly(field, 1);
                SandboxRef ref = kit.newRef("alone");
                assertThat(kit.create(ref, kit.launch(1, policy)).created()).isTrue();
                kit.awaitState(ref, SandboxState.RUNNING, 1);
                PolicyInForce.assertInForce(
                        policy, kit.probe.appliedPolicy(ref), claimed, "after a create using only " + field);
                kit.driver.delete(ref, OptionalLong.empty());
            }
        }

        @Test
        void required_aPolicyUsingEveryEnforceableFieldIsLaunchedAndInForce() {
            Set<PolicyField> enforceable = kit.capabilities.enforceablePolicyFields();
            List<LaunchPolicy> policies = new ArrayList<>();
            policies.add(LaunchPolicies.usingAll(enforceable, 1));
            if (enforceable.contains(PolicyField.NETWORK_NONE)
                    && enforceable.contains(PolicyField.NETWORK_ALLOW_LIST)) {
                Set<PolicyField> withAllowList = EnumSet.copyOf(enforceable);
                withAllowList.remove(PolicyField.NETWORK_NONE);
                policies.add(LaunchPolicies.usingAll(withAllowList, 1));
            }
            for (LaunchPolicy policy : policies) {
                SandboxRef ref = kit.newRef("enforced");
                assertThat(kit.create(ref, kit.launch(1, policy)).created()).isTrue();
                assertObserved(kit.awaitState(ref, SandboxState.RUNNING, 1), ref, 1, policy.digest());
                assertThat(kit.onlyResource(ref.id()).stamp(Labels.POLICY_DIGEST))
                        .isEqualTo(policy.digest());
                PolicyInForce.assertInForce(
                        policy, kit.probe.appliedPolicy(ref), enforceable, "after a create of generation 1");
            }
        }
    }

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

    // ---- shared assertions

    private static void assertObserved(SandboxObservation observation, SandboxRef ref, long generation, String digest) {
        assertThat(observation.ref()).as("observed identity").isEqualTo(ref);
        assertThat(observation.generation()).as("observed generation").isEqualTo(generation);
        assertThat(observation.policyDigest()).as("observed policy digest").isEqualTo(digest);
    }

    /** Every variable of {@code expected} with exactly its value; the backend may add its own. */
    private static void assertEnvironment(Map<String, String> expected, Map<String, String> launched, String when) {
        var wrong = new TreeMap<String, String>();
        expected.forEach((name, value) -> {
            if (!launched.containsKey(name)) {
                wrong.put(name, "missing");
            } else if (!launched.get(name).equals(value)) {
                wrong.put(name, "launched as " + quoted(launched.get(name)) + ", given " + quoted(value));
            }
        });
        if (!wrong.isEmpty()) {
            fail("the spec's environment did not reach the sandbox unchanged in " + when + ": " + wrong);
        }
    }

    private static String quoted(String value) {
        return '"' + value.replace("\\", "\\\\").replace("\n", "\\n").replace("\"", "\\\"") + '"';
    }

    private static SandboxSpec withLabels(SandboxSpec spec, Map<String, String> labels) {
        Map<String, String> merged = new HashMap<>(spec.labels());
        merged.putAll(labels);
        return new SandboxSpec(spec.image(), spec.command(), spec.args(), spec.environment(), merged, spec.resources());
    }

    private static Predicate<SandboxEvent> snapshotOf(SandboxRef ref, SandboxState state, long generation) {
        return event -> event instanceof SandboxEvent.Snapshot snapshot
                && snapshot.observation().ref().id().equals(ref.id())
                && snapshot.observation().state() == state
                && snapshot.observation().generation() == generation;
    }

    private static Predicate<SandboxEvent> deletedOf(SandboxRef ref) {
        return event -> event instanceof SandboxEvent.Deleted deleted
                && deleted.ref().id().equals(ref.id());
    }

    /** Runs {@code call}, which must fail with {@code code}; returns the failure. */
    private static DriverException expectFailure(DriverErrorCode code, Callable<?> call) {
        Object answer;
        try {
            answer = call.call();
        } catch (DriverException refused) {
            assertThat(refused.code())
                    .as("expected %s, got %s: %s", code, refused.code(), refused.getMessage())
                    .isEqualTo(code);
            return refused;
        } catch (Exception e) {
            throw new AssertionError("expected a DriverException with " + code + ", got " + e, e);
        }
        return fail("expected a DriverException with %s, but the call answered %s", code, answer);
    }

    private static DriverException expectFailure(DriverErrorCode code, Executable call) {
        return expectFailure(code, () -> {
            try {
                call.execute();
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable e) {
                throw new AssertionError(e);
            }
            return "normally";
        });
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
            SandboxSpec refused = permanentlyRefusedSpec();

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
