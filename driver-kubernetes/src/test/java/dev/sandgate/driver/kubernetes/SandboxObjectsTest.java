package dev.sandgate.driver.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.SandboxState;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Reading the Agent Sandbox controller's conditions into the execution's state. */
class SandboxObjectsTest {
    private static Map<String, Object> condition(String type, String status, String reason, long observedGeneration) {
        return Map.of(
                "type",
                type,
                "status",
                status,
                "reason",
                reason,
                "message",
                "",
                "observedGeneration",
                observedGeneration);
    }

    private static GenericKubernetesResource sandbox(
            SandboxApiVersion version, boolean running, long generation, List<Map<String, Object>> conditions) {
        return new GenericKubernetesResourceBuilder()
                .withApiVersion(version.apiVersion())
                .withKind("Sandbox")
                .withNewMetadata()
                .withName("s")
                .withGeneration(generation)
                .endMetadata()
                .withAdditionalProperties(
                        Map.of("spec", version.runModeFields(running), "status", Map.of("conditions", conditions)))
                .build();
    }

    private static SandboxState state(GenericKubernetesResource sandbox, SandboxApiVersion version) {
        return SandboxObjects.read(sandbox, version).state();
    }

    @Test
    void readyForTheCurrentSpecIsRunning() {
        var sandbox = sandbox(
                SandboxApiVersion.V1BETA1, true, 3, List.of(condition("Ready", "True", "DependenciesReady", 3)));

        assertThat(state(sandbox, SandboxApiVersion.V1BETA1)).isEqualTo(SandboxState.RUNNING);
    }

    @Test
    void readyWrittenForAnEarlierSpecIsNotRunning() {
        var sandbox = sandbox(
                SandboxApiVersion.V1BETA1, true, 4, List.of(condition("Ready", "True", "DependenciesReady", 3)));

        assertThat(state(sandbox, SandboxApiVersion.V1BETA1)).isEqualTo(SandboxState.PROVISIONING);
    }

    @Test
    void suspendedWithThePodTerminatedIsStopped() {
        var sandbox = sandbox(
                SandboxApiVersion.V1BETA1,
                false,
                5,
                List.of(
                        condition("Ready", "False", "SandboxSuspended", 5),
                        condition("Suspended", "True", "PodTerminated", 5)));

        assertThat(state(sandbox, SandboxApiVersion.V1BETA1)).isEqualTo(SandboxState.STOPPED);
    }

    @Test
    void askedToSuspendWhileThePodStillRunsIsStopping() {
        var sandbox = sandbox(
                SandboxApiVersion.V1BETA1,
                false,
                6,
                List.of(
                        condition("Ready", "True", "DependenciesReady", 5),
                        condition("Suspended", "True", "PodTerminated", 4)));

        assertThat(state(sandbox, SandboxApiVersion.V1BETA1)).isEqualTo(SandboxState.STOPPING);
    }

    @Test
    void aFailedPodIsFailed() {
        var sandbox = sandbox(SandboxApiVersion.V1BETA1, true, 2, List.of(condition("Ready", "False", "PodFailed", 2)));

        assertThat(state(sandbox, SandboxApiVersion.V1BETA1)).isEqualTo(SandboxState.FAILED);
    }

    @Test
    void v1alpha1StopsWithZeroReplicas() {
        var stopped = sandbox(
                SandboxApiVersion.V1ALPHA1, false, 2, List.of(condition("Suspended", "True", "PodTerminated", 2)));

        assertThat(SandboxObjects.spec(stopped)).containsEntry("replicas", 0);
        assertThat(SandboxApiVersion.V1ALPHA1.desiredRunning(stopped)).isFalse();
        assertThat(state(stopped, SandboxApiVersion.V1ALPHA1)).isEqualTo(SandboxState.STOPPED);
    }

    @Test
    void stampsWithoutTheNameAnnotationAreIncomplete() {
        String id = Identifiers.newSandboxId();
        var unnamed = new GenericKubernetesResourceBuilder()
                .withNewMetadata()
                .withName("s")
                .addToLabels(Labels.SANDBOX_ID, id)
                .addToLabels(Labels.WORKSPACE, "team")
                .addToLabels(Labels.GENERATION, "1")
                .addToAnnotations(Labels.POLICY_DIGEST, "sha256:" + "0".repeat(64))
                .endMetadata()
                .build();

        assertThat(SandboxObjects.stamps(unnamed)).isEmpty();
    }

    @Test
    void userLabelsAreTheLabelsOutsideTheReservedPrefix() {
        String id = Identifiers.newSandboxId();
        var labelled = new GenericKubernetesResourceBuilder()
                .withNewMetadata()
                .withName("s")
                .addToLabels(Labels.SANDBOX_ID, id)
                .addToLabels(Labels.WORKSPACE, "team")
                .addToLabels(Labels.GENERATION, "2")
                .addToLabels(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE)
                .addToLabels("team", "blue")
                .addToAnnotations(Labels.NAME, "notebook")
                .addToAnnotations(Labels.POLICY_DIGEST, "sha256:" + "0".repeat(64))
                .endMetadata()
                .build();

        var stamps = SandboxObjects.stamps(labelled).orElseThrow();

        assertThat(stamps.ref().id()).isEqualTo(id);
        assertThat(stamps.ref().name()).isEqualTo("notebook");
        assertThat(stamps.generation()).isEqualTo(2);
        assertThat(stamps.userLabels()).isEqualTo(Map.of("team", "blue"));
    }
}
