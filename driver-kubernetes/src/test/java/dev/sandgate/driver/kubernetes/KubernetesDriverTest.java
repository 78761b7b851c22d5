package dev.sandgate.driver.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import dev.sandgate.conformance.LaunchPolicies;
import dev.sandgate.driver.kubernetes.fakecluster.MockCluster;
import dev.sandgate.driver.kubernetes.fakecluster.PreconditionEnforcingDispatcher.ReceivedRequest;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.PolicyField;
import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.StaticPolicy;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.PersistentVolumeClaim;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The driver's Kubernetes-specific behaviour against the fake cluster: what it writes (launch policy, Secret,
 * NetworkPolicy), and how it answers the API server's 409s. The conformance kit covers the SPI's contract.
 */
class KubernetesDriverTest {
    private static final String NAMESPACE = "driver-test";
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static MockCluster cluster;

    private final AtomicReference<MutationHook> hook = new AtomicReference<>(MutationHook.NONE);
    private final String gatewayId = "driver-test-" + Identifiers.newSandboxId().substring(0, 8);
    private KubernetesDriver driver;

    @BeforeAll
    static void startCluster() {
        cluster = MockCluster.start(List.of("v1beta1", "v1alpha1"), "v1beta1");
    }

    @AfterAll
    static void stopCluster() {
        cluster.close();
    }

    @AfterEach
    void closeDriver() {
        if (driver != null) {
            for (var observation : driver.list()) {
                driver.delete(observation.ref(), OptionalLong.empty());
            }
            driver.close();
        }
    }

    private DriverSettings config() {
        return DriverSettings.EMPTY
                .with(KubernetesSettings.MASTER_URL, cluster.masterUrl())
                .with(KubernetesSettings.NAMESPACE, NAMESPACE)
                .with(KubernetesSettings.NETWORK_NONE, "network-policy")
                .with(KubernetesSettings.OPERATION_TIMEOUT, "30s");
    }

    private KubernetesDriver driver(DriverSettings config) {
        DriverContext context = new DriverContext(
                gatewayId, Clock.systemUTC(), (ref, op, id) -> hook.get().beforeMutation(ref, op, id));
        driver = (KubernetesDriver) new KubernetesDriverProvider().create(config, context);
        return driver;
    }

    private KubernetesDriver driver() {
        return driver(config());
    }

    private static SandboxRef newRef(String name) {
        return new SandboxRef(
                Identifiers.newSandboxId(),
                "team",
                name + "-" + Identifiers.newSandboxId().substring(0, 6));
    }

    private static LaunchInput launch(long generation, StaticPolicy policy) {
        return new LaunchInput(generation, LaunchPolicies.of(generation, policy, DynamicPolicy.EMPTY));
    }

    private static LaunchInput unrestricted(long generation) {
        return launch(generation, LaunchPolicies.unrestricted());
    }

    private static SandboxSpec spec() {
        return SandboxSpec.ofImage("registry.example/sleeper:1");
    }

    private KubernetesClient admin() {
        return cluster.admin();
    }

    private GenericKubernetesResource sandboxObject(SandboxRef ref) {
        List<GenericKubernetesResource> found = admin().genericKubernetesResources(cluster.sandboxes())
                .inNamespace(NAMESPACE)
                .withLabel(Labels.SANDBOX_ID, ref.id())
                .list()
                .getItems();
        assertThat(found).hasSize(1);
        return found.get(0);
    }

    private Container sandboxContainer(GenericKubernetesResource sandbox) {
        @SuppressWarnings("unchecked")
        Map<String, Object> template = (Map<String, Object>)
                ((Map<String, Object>) sandbox.getAdditionalProperties().get("spec")).get("podTemplate");
        var podSpec = admin().getKubernetesSerialization()
                .convertValue(template.get("spec"), io.fabric8.kubernetes.api.model.PodSpec.class);
        return podSpec.getContainers().get(0);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, String> podTemplateLabels(GenericKubernetesResource sandbox) {
        Map<String, Object> template = (Map<String, Object>)
                ((Map<String, Object>) sandbox.getAdditionalProperties().get("spec")).get("podTemplate");
        return (Map<String, String>) ((Map<String, Object>) template.get("metadata")).get("labels");
    }

    private void awaitRunning(SandboxRef ref, long generation) {
        await(ref + " RUNNING at generation " + generation)
                .atMost(TIMEOUT)
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(20))
                .until(
                        () -> driver.get(ref),
                        observation ->
                                observation.state() == SandboxState.RUNNING && observation.generation() == generation);
    }

    private List<ReceivedRequest> driverRequests(String method, String pathPart) {
        return cluster.requestsFrom(KubernetesDriverProvider.USER_AGENT).stream()
                .filter(request ->
                        request.method().equals(method) && request.path().contains(pathPart))
                .toList();
    }

    @Test
    void theLaunchPolicyIsTheSandboxContainersSecurityContextAndLimits() {
        SandboxRef ref = newRef("hardened");
        StaticPolicy policy = new StaticPolicy(true, NetworkMode.NONE, Set.of("ALL"), true, 256L * 1024 * 1024, 500, 0);

        driver().create(ref, spec(), launch(1, policy));

        GenericKubernetesResource sandbox = sandboxObject(ref);
        Container container = sandboxContainer(sandbox);
        assertThat(container.getSecurityContext().getReadOnlyRootFilesystem()).isTrue();
        assertThat(container.getSecurityContext().getAllowPrivilegeEscalation()).isFalse();
        assertThat(container.getSecurityContext().getCapabilities().getDrop()).containsExactly("ALL");
        assertThat(container.getResources().getLimits())
                .containsEntry("memory", new Quantity("268435456"))
                .containsEntry("cpu", new Quantity("500m"));
        assertThat(podTemplateLabels(sandbox)).containsEntry(SandboxManifests.NETWORK_LABEL, "none");
        awaitRunning(ref, 1);
        Pod pod = admin().pods()
                .inNamespace(NAMESPACE)
                .withName(sandbox.getMetadata().getName())
                .get();
        assertThat(pod.getSpec().getContainers().get(0).getSecurityContext()).isEqualTo(container.getSecurityContext());
        assertThat(pod.getSpec().getAutomountServiceAccountToken()).isFalse();
        assertThat(pod.getMetadata().getLabels()).containsEntry(SandboxManifests.NETWORK_LABEL, "none");
    }

    @Test
    void networkModeNoneIsEnforcedByADenyAllNetworkPolicyInTheNamespace() {
        driver().create(newRef("isolated"), spec(), launch(1, StaticPolicy.DEFAULT));

        NetworkPolicy policy = admin().network()
                .networkPolicies()
                .inNamespace(NAMESPACE)
                .withName(SandboxManifests.NETWORK_POLICY_NAME)
                .get();
        assertThat(policy.getSpec().getPodSelector().getMatchLabels())
                .isEqualTo(Map.of(SandboxManifests.NETWORK_LABEL, "none"));
        assertThat(policy.getSpec().getPolicyTypes()).containsExactlyInAnyOrder("Ingress", "Egress");
        assertThat(policy.getSpec().getIngress()).isNullOrEmpty();
        assertThat(policy.getSpec().getEgress()).isNullOrEmpty();
    }

    @Test
    void aNetworkPolicyThatNoLongerDeniesEverythingRefusesNetworkModeNone() {
        String namespace = "weakened";
        admin().network()
                .networkPolicies()
                .inNamespace(namespace)
                .resource(new NetworkPolicyBuilder(SandboxManifests.denyAllNetworkPolicy(namespace))
                        .editSpec()
                        .addNewEgress()
                        .endEgress()
                        .endSpec()
                        .build())
                .create();
        KubernetesDriver weakened = driver(config().with(KubernetesSettings.NAMESPACE, namespace));
        SandboxRef ref = newRef("unprotected");

        DriverException refused = catchThrowableOfType(
                DriverException.class, () -> weakened.create(ref, spec(), launch(1, StaticPolicy.DEFAULT)));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
        assertThat(admin().genericKubernetesResources(cluster.sandboxes())
                        .inNamespace(namespace)
                        .list()
                        .getItems())
                .isEmpty();
    }

    @Test
    void withoutNetworkPolicyNetworkModeNoneIsUnsupportedBeforeAnyRequest() {
        KubernetesDriver plain = driver(config().with(KubernetesSettings.NETWORK_NONE, "unsupported"));
        SandboxRef ref = newRef("no-network");
        int posts = driverRequests("POST", "").size();

        assertThat(plain.capabilities().enforceablePolicyFields()).doesNotContain(PolicyField.NETWORK_NONE);
        DriverException refused = catchThrowableOfType(
                DriverException.class, () -> plain.create(ref, spec(), launch(1, StaticPolicy.DEFAULT)));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.UNSUPPORTED);
        assertThat(refused.getMessage()).contains("NETWORK_NONE");
        assertThat(driverRequests("POST", "")).hasSize(posts);
    }

    @Test
    void aPidsLimitIsUnsupportedBecauseKubernetesHasNoPerPodPidsLimit() {
        LaunchPolicy pids = LaunchPolicies.usingOnly(PolicyField.PIDS_LIMIT, 1);

        DriverException refused =
                catchThrowableOfType(DriverException.class, () -> driver().validate(spec(), new LaunchInput(1, pids)));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.UNSUPPORTED);
        assertThat(refused.getMessage()).contains("PIDS_LIMIT");
    }

    @Test
    void environmentValuesLiveInASecretOwnedByTheSandboxNeverInTheSandboxObject() {
        SandboxRef ref = newRef("with-secrets");
        SandboxSpec spec = new SandboxSpec(
                "registry.example/agent:1",
                List.of(),
                List.of(),
                Map.of("API_TOKEN", "value-that-must-stay-secret"),
                Map.of(),
                ResourceRequests.NONE);

        driver().create(ref, spec, unrestricted(1));

        GenericKubernetesResource sandbox = sandboxObject(ref);
        assertThat(admin().getKubernetesSerialization().asJson(sandbox)).doesNotContain("value-that-must-stay-secret");
        String secretName = ResourceNames.environmentSecretName(ref.id());
        assertThat(sandboxContainer(sandbox).getEnvFrom())
                .singleElement()
                .satisfies(source -> assertThat(source.getSecretRef().getName()).isEqualTo(secretName));
        Secret secret =
                admin().secrets().inNamespace(NAMESPACE).withName(secretName).get();
        assertThat(secret.getStringData()).containsEntry("API_TOKEN", "value-that-must-stay-secret");
        assertThat(secret.getMetadata().getOwnerReferences())
                .singleElement()
                .satisfies(owner -> assertThat(owner.getUid())
                        .isEqualTo(sandbox.getMetadata().getUid()));
        assertThat(secret.getMetadata().getLabels()).containsEntry(Labels.SANDBOX_ID, ref.id());
    }

    @Test
    void aNewExecutionGetsItsOwnPolicyOnTheSameSandboxAndWorkspace() {
        SandboxRef ref = newRef("relaunched");
        StaticPolicy first = new StaticPolicy(true, NetworkMode.NONE, Set.of("NET_RAW"), true, 0, 0, 0);
        driver().create(ref, spec(), launch(1, first));
        awaitRunning(ref, 1);
        GenericKubernetesResource before = sandboxObject(ref);
        PersistentVolumeClaim claimBefore = admin().persistentVolumeClaims()
                .inNamespace(NAMESPACE)
                .withName(ResourceNames.workspaceClaimName(before.getMetadata().getName()))
                .get();
        driver.stop(ref, OptionalLong.of(1));

        LaunchInput second = launch(2, LaunchPolicies.unrestricted());
        driver.start(ref, second);
        awaitRunning(ref, 2);

        GenericKubernetesResource after = sandboxObject(ref);
        assertThat(after.getMetadata().getUid()).isEqualTo(before.getMetadata().getUid());
        assertThat(after.getMetadata().getLabels()).containsEntry(Labels.GENERATION, "2");
        assertThat(after.getMetadata().getAnnotations())
                .containsEntry(Labels.POLICY_DIGEST, second.policy().digest());
        assertThat(sandboxContainer(after).getSecurityContext()).isNull();
        assertThat(podTemplateLabels(after))
                .containsEntry(Labels.GENERATION, "2")
                .doesNotContainKey(SandboxManifests.NETWORK_LABEL);
        assertThat(sandboxContainer(after).getImage()).isEqualTo(spec().image());
        PersistentVolumeClaim claimAfter = admin().persistentVolumeClaims()
                .inNamespace(NAMESPACE)
                .withName(claimBefore.getMetadata().getName())
                .get();
        assertThat(claimAfter.getMetadata().getUid())
                .isEqualTo(claimBefore.getMetadata().getUid());
    }

    @Test
    void aStopThatLosesARaceWithAnotherWriterDecidesAgainOnTheFreshObject() {
        SandboxRef ref = newRef("raced-stop");
        driver().create(ref, spec(), unrestricted(1));
        awaitRunning(ref, 1);
        String name = sandboxObject(ref).getMetadata().getName();
        hook.set((target, operation, backendId) -> annotate(name, "raced", "stop"));
        int patches = driverRequests("PATCH", "/sandboxes/" + name).size();

        assertThat(driver.stop(ref, OptionalLong.of(1)).stoppedNow()).isTrue();

        assertThat(driverRequests("PATCH", "/sandboxes/" + name))
                .as("the first patch carried the resourceVersion read before the concurrent change: 409, then again")
                .hasSize(patches + 2);
        assertThat(sandboxObject(ref).getMetadata().getAnnotations()).containsEntry("raced", "stop");
        assertThat(driver.get(ref).state()).isEqualTo(SandboxState.STOPPED);
    }

    @Test
    void aDeleteThatLosesARaceWithAnotherWriterDeletesOnTheSecondTryAndSaysSo() {
        SandboxRef ref = newRef("raced-delete");
        driver().create(ref, spec(), unrestricted(1));
        awaitRunning(ref, 1);
        String name = sandboxObject(ref).getMetadata().getName();
        hook.set((target, operation, backendId) -> annotate(name, "raced", "delete"));
        int deletes = driverRequests("DELETE", "/sandboxes/" + name).size();

        assertThat(driver.delete(ref, OptionalLong.of(1)).deleted()).isTrue();

        assertThat(driverRequests("DELETE", "/sandboxes/" + name))
                .as("the first delete's resourceVersion precondition failed with 409, the second succeeded")
                .hasSize(deletes + 2);
        assertThat(admin().genericKubernetesResources(cluster.sandboxes())
                        .inNamespace(NAMESPACE)
                        .withName(name)
                        .get())
                .isNull();
    }

    @Test
    void aDeleteOfASandboxSomeoneElseIsDeletingWaitsUntilItIsGoneAndDeletesNothing() throws Exception {
        SandboxRef ref = newRef("held");
        driver().create(ref, spec(), unrestricted(1));
        awaitRunning(ref, 1);
        String name = sandboxObject(ref).getMetadata().getName();
        var sandboxes = admin().genericKubernetesResources(cluster.sandboxes()).inNamespace(NAMESPACE);
        sandboxes
                .withName(name)
                .patch(
                        PatchContext.of(PatchType.JSON_MERGE),
                        "{\"metadata\":{\"finalizers\":[\"test.sandgate.dev/hold\"]}}");
        sandboxes.withName(name).delete();
        int reads = driverRequests("GET", "/sandboxes/" + name).size();

        CompletableFuture<Boolean> deleted = CompletableFuture.supplyAsync(
                () -> driver.delete(ref, OptionalLong.empty()).deleted());
        await("the driver waits, reading the sandbox")
                .atMost(TIMEOUT)
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> driverRequests("GET", "/sandboxes/" + name).size() > reads);
        assertThat(deleted)
                .as("the delete waits while the sandbox still exists")
                .isNotDone();
        sandboxes.withName(name).patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"finalizers\":[]}}");

        assertThat(deleted.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS))
                .as("someone else deleted it: this call reports nothing deleted")
                .isFalse();
    }

    @Test
    void createOfANameThatAnotherSandboxHoldsFailsPreconditionAndTouchesNothing() {
        SandboxRef first = newRef("taken");
        KubernetesDriver instance = driver();
        instance.create(first, spec(), unrestricted(1));
        GenericKubernetesResource holder = sandboxObject(first);
        SandboxRef second = new SandboxRef(Identifiers.newSandboxId(), first.workspace(), first.name());

        DriverException refused =
                catchThrowableOfType(DriverException.class, () -> instance.create(second, spec(), unrestricted(1)));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
        assertThat(refused.mismatches()).containsExactly(new Mismatch(Mismatch.SANDBOX_ID, second.id(), first.id()));
        var after = sandboxObject(first).getMetadata();
        assertThat(after.getUid()).isEqualTo(holder.getMetadata().getUid());
        assertThat(after.getGeneration())
                .as("the spec was not changed")
                .isEqualTo(holder.getMetadata().getGeneration());
        assertThat(after.getLabels()).isEqualTo(holder.getMetadata().getLabels());
        assertThat(after.getAnnotations()).isEqualTo(holder.getMetadata().getAnnotations());
    }

    private void annotate(String name, String key, String value) {
        admin().genericKubernetesResources(cluster.sandboxes())
                .inNamespace(NAMESPACE)
                .withName(name)
                .patch(
                        PatchContext.of(PatchType.JSON_MERGE),
                        "{\"metadata\":{\"annotations\":{\"" + key + "\":\"" + value + "\"}}}");
    }
}
