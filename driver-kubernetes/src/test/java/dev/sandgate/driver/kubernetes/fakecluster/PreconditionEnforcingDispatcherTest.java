package dev.sandgate.driver.kubernetes.fakecluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.DeleteOptions;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.Preconditions;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.CustomResourceDefinitionContext;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.MockWebServer;
import java.net.InetAddress;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The dispatcher enforces what the API server enforces and fabric8's mock does not: DeleteOptions preconditions on
 * uid and resourceVersion, stale status updates, foreground deletion, and discovery of served versions only.
 */
class PreconditionEnforcingDispatcherTest {
    private static final String NAMESPACE = "precondition-test";
    private static final ResourceDefinitionContext SANDBOXES = MockCluster.sandboxContext("v1beta1");

    private KubernetesMockServer server;
    private KubernetesClient client;

    @BeforeEach
    void startServer() {
        var served = new CustomResourceDefinitionContext.Builder()
                .withName("sandboxes.agents.x-k8s.io")
                .withGroup("agents.x-k8s.io")
                .withVersion("v1beta1")
                .withKind("Sandbox")
                .withPlural("sandboxes")
                .withScope("Namespaced")
                .withStatusSubresource(true)
                .build();
        server = new KubernetesMockServer(
                MockCluster.mockContext(),
                new MockWebServer(),
                new HashMap<>(),
                new PreconditionEnforcingDispatcher(List.of(served)),
                false);
        server.init(InetAddress.getLoopbackAddress(), 0);
        Config config = new ConfigBuilder(Config.empty())
                .withMasterUrl(server.url("/"))
                .withNamespace(NAMESPACE)
                .withRequestRetryBackoffLimit(0)
                .build();
        client = new KubernetesClientBuilder().withConfig(config).build();
    }

    @AfterEach
    void stopServer() {
        client.close();
        server.destroy();
    }

    private ConfigMap createConfigMap(String name) {
        return client.configMaps()
                .resource(new ConfigMapBuilder()
                        .withNewMetadata()
                        .withName(name)
                        .withNamespace(NAMESPACE)
                        .endMetadata()
                        .addToData("key", "value")
                        .build())
                .create();
    }

    private GenericKubernetesResource createSandbox(String name) {
        return client.genericKubernetesResources(SANDBOXES)
                .resource(new GenericKubernetesResourceBuilder()
                        .withApiVersion("agents.x-k8s.io/v1beta1")
                        .withKind("Sandbox")
                        .withNewMetadata()
                        .withName(name)
                        .withNamespace(NAMESPACE)
                        .endMetadata()
                        .withAdditionalProperties(Map.of("spec", Map.of("operatingMode", "Running")))
                        .build())
                .create();
    }

    private static String configMapPath(String name) {
        return "/api/v1/namespaces/" + NAMESPACE + "/configmaps/" + name;
    }

    private static String sandboxPath(String name) {
        return "/apis/agents.x-k8s.io/v1beta1/namespaces/" + NAMESPACE + "/sandboxes/" + name;
    }

    private static DeleteOptions preconditions(String uid, String resourceVersion) {
        DeleteOptions options = new DeleteOptions();
        options.setApiVersion("v1");
        options.setKind("DeleteOptions");
        options.setPreconditions(new Preconditions(resourceVersion, uid));
        return options;
    }

    private KubernetesClientException deleteExpectingFailure(String path, DeleteOptions options) {
        try {
            client.raw(path, "DELETE", options);
        } catch (KubernetesClientException e) {
            return e;
        }
        throw new AssertionError("DELETE " + path + " succeeded");
    }

    @Test
    void deleteWithAnotherUidIsAConflictAndTheObjectSurvives() {
        ConfigMap stored = createConfigMap("wrong-uid");

        KubernetesClientException refused = deleteExpectingFailure(
                configMapPath("wrong-uid"), preconditions("00000000-0000-0000-0000-000000000000", null));

        assertThat(refused.getCode()).isEqualTo(409);
        assertThat(refused.getStatus().getReason()).isEqualTo("Conflict");
        assertThat(refused.getStatus().getMessage())
                .isEqualTo("Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000,"
                        + " UID in object meta: " + stored.getMetadata().getUid());
        assertThat(refused.getStatus().getDetails().getName()).isEqualTo("wrong-uid");
        assertThat(refused.getStatus().getDetails().getKind()).isEqualTo("configmaps");
        ConfigMap survivor = client.configMaps().withName("wrong-uid").get();
        assertThat(survivor).isNotNull();
        assertThat(survivor.getMetadata().getUid())
                .isEqualTo(stored.getMetadata().getUid());
    }

    @Test
    void deleteWithAStaleResourceVersionIsAConflictAndTheObjectSurvives() {
        ConfigMap stored = createConfigMap("stale-version");
        ConfigMap changed = client.configMaps()
                .withName("stale-version")
                .edit(map ->
                        new ConfigMapBuilder(map).addToData("key", "changed").build());
        assertThat(changed.getMetadata().getResourceVersion())
                .isNotEqualTo(stored.getMetadata().getResourceVersion());

        KubernetesClientException refused = deleteExpectingFailure(
                configMapPath("stale-version"),
                preconditions(
                        stored.getMetadata().getUid(), stored.getMetadata().getResourceVersion()));

        assertThat(refused.getCode()).isEqualTo(409);
        assertThat(refused.getStatus().getMessage())
                .startsWith("Precondition failed: ResourceVersion in precondition: "
                        + stored.getMetadata().getResourceVersion());
        assertThat(client.configMaps().withName("stale-version").get().getData())
                .containsEntry("key", "changed");
    }

    @Test
    void fabric8LockedResourceVersionDeleteOfAStaleVersionIsAConflict() {
        ConfigMap stored = createConfigMap("locked");
        client.configMaps()
                .withName("locked")
                .edit(map ->
                        new ConfigMapBuilder(map).addToData("key", "changed").build());

        assertThatThrownBy(() -> client.configMaps()
                        .withName("locked")
                        .lockResourceVersion(stored.getMetadata().getResourceVersion())
                        .delete())
                .isInstanceOfSatisfying(
                        KubernetesClientException.class,
                        e -> assertThat(e.getCode()).isEqualTo(409));
        assertThat(client.configMaps().withName("locked").get()).isNotNull();
    }

    @Test
    void deleteWithTheCurrentUidAndResourceVersionDeletes() {
        ConfigMap stored = createConfigMap("matching");

        client.raw(
                configMapPath("matching"),
                "DELETE",
                preconditions(
                        stored.getMetadata().getUid(), stored.getMetadata().getResourceVersion()));

        assertThat(client.configMaps().withName("matching").get()).isNull();
    }

    @Test
    void deleteOfACustomResourceWithAnotherUidIsAConflictAndItSurvives() {
        GenericKubernetesResource stored = createSandbox("custom");

        KubernetesClientException refused = deleteExpectingFailure(
                sandboxPath("custom"), preconditions("11111111-1111-1111-1111-111111111111", null));

        assertThat(refused.getCode()).isEqualTo(409);
        assertThat(refused.getStatus().getDetails().getGroup()).isEqualTo("agents.x-k8s.io");
        assertThat(refused.getStatus().getDetails().getKind()).isEqualTo("sandboxes");
        assertThat(client.genericKubernetesResources(SANDBOXES)
                        .withName("custom")
                        .get()
                        .getMetadata()
                        .getUid())
                .isEqualTo(stored.getMetadata().getUid());
    }

    @Test
    void deleteOfACustomResourceWithMatchingPreconditionsDeletes() {
        GenericKubernetesResource stored = createSandbox("custom-matching");

        client.raw(
                sandboxPath("custom-matching"),
                "DELETE",
                preconditions(
                        stored.getMetadata().getUid(), stored.getMetadata().getResourceVersion()));

        assertThat(client.genericKubernetesResources(SANDBOXES)
                        .withName("custom-matching")
                        .get())
                .isNull();
    }

    @Test
    void foregroundDeleteKeepsTheObjectUntilItsFinalizerIsRemoved() {
        GenericKubernetesResource stored = createSandbox("foreground");
        DeleteOptions options = preconditions(
                stored.getMetadata().getUid(), stored.getMetadata().getResourceVersion());
        options.setPropagationPolicy("Foreground");

        client.raw(sandboxPath("foreground"), "DELETE", options);

        GenericKubernetesResource deleting = client.genericKubernetesResources(SANDBOXES)
                .withName("foreground")
                .get();
        assertThat(deleting.getMetadata().getDeletionTimestamp()).isNotNull();
        assertThat(deleting.getMetadata().getFinalizers()).containsExactly("foregroundDeletion");

        client.genericKubernetesResources(SANDBOXES)
                .withName("foreground")
                .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"finalizers\":[]}}");

        assertThat(client.genericKubernetesResources(SANDBOXES)
                        .withName("foreground")
                        .get())
                .isNull();
    }

    @Test
    void mergePatchCarryingAStaleResourceVersionIsAConflict() {
        GenericKubernetesResource stored = createSandbox("patched");
        client.genericKubernetesResources(SANDBOXES)
                .withName("patched")
                .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}");

        String stalePatch = "{\"metadata\":{\"resourceVersion\":\""
                + stored.getMetadata().getResourceVersion() + "\"},\"spec\":{\"operatingMode\":\"Suspended\"}}";
        assertThatThrownBy(() -> client.genericKubernetesResources(SANDBOXES)
                        .withName("patched")
                        .patch(PatchContext.of(PatchType.JSON_MERGE), stalePatch))
                .isInstanceOfSatisfying(
                        KubernetesClientException.class,
                        e -> assertThat(e.getCode()).isEqualTo(409));
        assertThat(client.genericKubernetesResources(SANDBOXES)
                        .withName("patched")
                        .get()
                        .getAdditionalProperties())
                .extractingByKey("spec")
                .isEqualTo(Map.of("operatingMode", "Running"));
    }

    @Test
    void statusUpdateCarryingAStaleResourceVersionIsAConflict() {
        GenericKubernetesResource stored = createSandbox("stale-status");
        client.genericKubernetesResources(SANDBOXES)
                .withName("stale-status")
                .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"spec\":{\"operatingMode\":\"Suspended\"}}");
        GenericKubernetesResource stale = Serialization.clone(stored);
        stale.getAdditionalProperties().put("status", Map.of("conditions", List.of()));

        assertThatThrownBy(() -> client.genericKubernetesResources(SANDBOXES)
                        .resource(stale)
                        .updateStatus())
                .isInstanceOfSatisfying(
                        KubernetesClientException.class,
                        e -> assertThat(e.getCode()).isEqualTo(409));
    }

    @Test
    void mergePatchReplacesArraysAsRfc7386Says() {
        createSandbox("arrays");
        client.genericKubernetesResources(SANDBOXES)
                .withName("arrays")
                .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"spec\":{\"items\":[\"a\",\"b\"]}}");

        GenericKubernetesResource patched = client.genericKubernetesResources(SANDBOXES)
                .withName("arrays")
                .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"spec\":{\"items\":[\"c\"],\"gone\":null}}");

        assertThat(patched.getAdditionalProperties())
                .extractingByKey("spec")
                .isEqualTo(Map.of("operatingMode", "Running", "items", List.of("c")));
    }

    @Test
    void discoveryAnswersAServedVersionWithItsResources() {
        var resources = client.getApiResources("agents.x-k8s.io/v1beta1");

        assertThat(resources.getResources())
                .extracting(resource -> resource.getName())
                .containsExactly("sandboxes", "sandboxes/status");
    }

    @Test
    void discoveryAnswersAnUnservedVersionWithNotFound() {
        createSandbox("present"); // the plain mock would answer a list of these

        assertThat(client.getApiResources("agents.x-k8s.io/v1alpha1")).isNull();
    }
}
