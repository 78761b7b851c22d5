package dev.sandgate.driver.kubernetes;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.StaticPolicy;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvFromSourceBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.PersistentVolumeClaimSpecBuilder;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodSpecBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.ResourceRequirementsBuilder;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.SecurityContextBuilder;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Builds what the driver writes: the Sandbox object of a new sandbox, the patches that stop it and launch a new
 * execution, the Secret that carries its environment and the namespace's deny-all NetworkPolicy.
 *
 * <p>The launch policy maps onto the sandbox container's {@code securityContext} and {@code resources.limits}
 * (read-only root filesystem, dropped capabilities, {@code allowPrivilegeEscalation: false}, memory and CPU limits).
 * Network mode none is a pod label that the namespace's NetworkPolicy selects (see {@link
 * KubernetesSettings.NetworkNoneMode}).
 */
final class SandboxManifests {
    /** The name of the sandbox's container in the pod template. */
    static final String CONTAINER = "sandbox";

    /**
     * The sandbox container's variable holding its pod's generation label (Downward API), which the exec guard
     * compares with the generation the exec was meant for (see PodExec).
     */
    static final String GENERATION_VARIABLE = "SANDGATE_GENERATION";
    /** Pod label selecting sandboxes whose policy asks for network mode none. */
    static final String NETWORK_LABEL = Labels.RESERVED_PREFIX + "network";

    static final String NETWORK_NONE_VALUE = "none";
    /** The NetworkPolicy that denies all traffic of pods labelled {@link #NETWORK_LABEL}{@code =none}. */
    static final String NETWORK_POLICY_NAME = "sandgate-network-none";

    private final KubernetesSettings settings;
    private final String gatewayId;
    private final SandboxApiVersion version;
    private final KubernetesSerialization serialization;

    SandboxManifests(
            KubernetesSettings settings,
            String gatewayId,
            SandboxApiVersion version,
            KubernetesSerialization serialization) {
        this.settings = requireNonNull(settings, "settings is null");
        this.gatewayId = requireNonNull(gatewayId, "gatewayId is null");
        this.version = requireNonNull(version, "version is null");
        this.serialization = requireNonNull(serialization, "serialization is null");
    }

    /**
     * Labels every object of the sandbox carries, without the generation: the user's labels, except any under the
     * reserved prefix (which only the driver sets), then the managed ones.
     */
    Map<String, String> sandboxLabels(SandboxRef ref, Map<String, String> userLabels) {
        Map<String, String> labels = new TreeMap<>(userLabels);
        labels.keySet().removeIf(Labels::isReserved);
        labels.put(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE);
        labels.put(Labels.GATEWAY_ID, gatewayId);
        labels.put(Labels.SANDBOX_ID, ref.id());
        labels.put(Labels.WORKSPACE, ref.workspace());
        return labels;
    }

    private Map<String, String> executionLabels(SandboxRef ref, Map<String, String> userLabels, long generation) {
        Map<String, String> labels = sandboxLabels(ref, userLabels);
        labels.put(Labels.GENERATION, Long.toString(generation));
        return labels;
    }

    private static Map<String, String> executionAnnotations(SandboxRef ref, LaunchInput launch) {
        Map<String, String> annotations = new TreeMap<>();
        annotations.put(Labels.NAME, ref.name());
        annotations.put(Labels.POLICY_DIGEST, launch.policy().digest());
        return annotations;
    }

    /** The Sandbox object of a new sandbox, running generation {@code launch.generation()}. */
    GenericKubernetesResource newSandbox(
            String namespace, String name, SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
        Map<String, String> labels = executionLabels(ref, spec.labels(), launch.generation());
        Map<String, String> annotations = executionAnnotations(ref, launch);

        Map<String, String> podLabels = new TreeMap<>(labels);
        if (networkNone(launch)) {
            podLabels.put(NETWORK_LABEL, NETWORK_NONE_VALUE);
        }
        Map<String, Object> podTemplate = new LinkedHashMap<>();
        podTemplate.put("metadata", Map.of("labels", podLabels, "annotations", annotations));
        podTemplate.put("spec", toMap(podSpec(ref, spec, launch)));

        Map<String, Object> claimSpec = toMap(new PersistentVolumeClaimSpecBuilder()
                .withAccessModes("ReadWriteOnce")
                .withStorageClassName(settings.storageClass().orElse(null))
                .withNewResources()
                .addToRequests("storage", settings.workspaceSize())
                .endResources()
                .build());
        Map<String, Object> claimTemplate = new LinkedHashMap<>();
        claimTemplate.put(
                "metadata", Map.of("name", ResourceNames.WORKSPACE_VOLUME, "labels", sandboxLabels(ref, Map.of())));
        claimTemplate.put("spec", claimSpec);

        Map<String, Object> sandboxSpec = new LinkedHashMap<>();
        sandboxSpec.put("podTemplate", podTemplate);
        sandboxSpec.put("volumeClaimTemplates", List.of(claimTemplate));
        sandboxSpec.putAll(version.runModeFields(true));

        return new GenericKubernetesResourceBuilder()
                .withApiVersion(version.apiVersion())
                .withKind(SandboxApiVersion.KIND)
                .withMetadata(new ObjectMetaBuilder()
                        .withName(name)
                        .withNamespace(namespace)
                        .withLabels(labels)
                        .withAnnotations(annotations)
                        .build())
                .withAdditionalProperties(Map.of("spec", sandboxSpec))
                .build();
    }

    private PodSpec podSpec(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
        ContainerBuilder container = new ContainerBuilder()
                .withName(CONTAINER)
                .withImage(spec.image())
                .withCommand(spec.command().isEmpty() ? null : spec.command())
                .withArgs(spec.args().isEmpty() ? null : spec.args())
                .withVolumeMounts(new VolumeMountBuilder()
                        .withName(ResourceNames.WORKSPACE_VOLUME)
                        .withMountPath(settings.workspaceMountPath())
                        .build())
                .withSecurityContext(securityContext(launch.policy().staticPolicy()))
                .withResources(resources(spec.resources(), launch.policy().staticPolicy()))
                .withEnv(generationVariable());
        if (!spec.environment().isEmpty()) {
            container.withEnvFrom(new EnvFromSourceBuilder()
                    .withNewSecretRef()
                    .withName(ResourceNames.environmentSecretName(ref.id()))
                    .withOptional(false)
                    .endSecretRef()
                    .build());
        }
        return new PodSpecBuilder()
                .withContainers(container.build())
                // A sandbox does not talk to the Kubernetes API, and an exited execution is not restarted.
                .withAutomountServiceAccountToken(false)
                .withEnableServiceLinks(false)
                .withRestartPolicy("Never")
                .build();
    }

    /**
     * A JSON merge patch that launches generation {@code launch.generation()}: the generation label, the policy
     * digest, the container's security settings and limits, and the run mode. It carries {@code resourceVersion}, so
     * the API server refuses it with 409 if the object changed since it was read.
     */
    Map<String, Object> launchPatch(GenericKubernetesResource current, SandboxRef ref, LaunchInput launch) {
        Map<String, Object> podTemplateSpec = podTemplateSpec(current);
        PodSpec podSpec = serialization.convertValue(podTemplateSpec, PodSpec.class);
        StaticPolicy policy = launch.policy().staticPolicy();
        List<Container> containers = new ArrayList<>();
        for (Container container : podSpec.getContainers()) {
            if (CONTAINER.equals(container.getName())) {
                ResourceRequests requests = requestsOf(container.getResources());
                ContainerBuilder updated = new ContainerBuilder(container)
                        .withSecurityContext(securityContext(policy))
                        .withResources(resources(requests, policy));
                if (container.getEnv().stream().noneMatch(variable -> GENERATION_VARIABLE.equals(variable.getName()))) {
                    updated.addToEnv(generationVariable()); // a Sandbox created before the exec guard
                }
                container = updated.build();
            }
            containers.add(container);
        }

        Map<String, String> labelChanges = new TreeMap<>();
        labelChanges.put(Labels.GENERATION, Long.toString(launch.generation()));
        Map<String, Object> podLabelChanges = new LinkedHashMap<>(labelChanges);
        // null removes the label in a merge patch
        podLabelChanges.put(NETWORK_LABEL, networkNone(launch) ? NETWORK_NONE_VALUE : null);
        Map<String, String> annotationChanges =
                Map.of(Labels.POLICY_DIGEST, launch.policy().digest());

        Map<String, Object> templatePatch = new LinkedHashMap<>();
        templatePatch.put("metadata", Map.of("labels", podLabelChanges, "annotations", annotationChanges));
        templatePatch.put("spec", Map.of("containers", toList(containers)));

        Map<String, Object> specPatch = new LinkedHashMap<>();
        specPatch.put("podTemplate", templatePatch);
        specPatch.putAll(version.runModeFields(true));

        Map<String, Object> metadataPatch = new LinkedHashMap<>();
        metadataPatch.put("resourceVersion", current.getMetadata().getResourceVersion());
        metadataPatch.put("labels", labelChanges);
        metadataPatch.put("annotations", annotationChanges);
        return Map.of("metadata", metadataPatch, "spec", specPatch);
    }

    /** A JSON merge patch that sets the run mode, conditional on {@code resourceVersion}. */
    Map<String, Object> runModePatch(GenericKubernetesResource current, boolean running) {
        return Map.of(
                "metadata", Map.of("resourceVersion", current.getMetadata().getResourceVersion()),
                "spec", version.runModeFields(running));
    }

    /** {@link #GENERATION_VARIABLE}: the pod's own generation label, through the Downward API. */
    private static EnvVar generationVariable() {
        return new EnvVarBuilder()
                .withName(GENERATION_VARIABLE)
                .withNewValueFrom()
                .withNewFieldRef()
                .withFieldPath("metadata.labels['" + Labels.GENERATION + "']")
                .endFieldRef()
                .endValueFrom()
                .build();
    }

    /** The Secret with the sandbox's environment; the pod reads it through {@code envFrom}. */
    Secret environmentSecret(String namespace, SandboxRef ref, SandboxSpec spec, GenericKubernetesResource owner) {
        return new SecretBuilder()
                .withNewMetadata()
                .withName(ResourceNames.environmentSecretName(ref.id()))
                .withNamespace(namespace)
                .withLabels(sandboxLabels(ref, Map.of()))
                .addNewOwnerReference()
                .withApiVersion(version.apiVersion())
                .withKind(SandboxApiVersion.KIND)
                .withName(owner.getMetadata().getName())
                .withUid(owner.getMetadata().getUid())
                .endOwnerReference()
                .endMetadata()
                .withType("Opaque")
                .withImmutable(true)
                .withStringData(new TreeMap<>(spec.environment()))
                .build();
    }

    /** Denies all ingress and egress of the namespace's pods labelled {@link #NETWORK_LABEL}{@code =none}. */
    static NetworkPolicy denyAllNetworkPolicy(String namespace) {
        return new NetworkPolicyBuilder()
                .withNewMetadata()
                .withName(NETWORK_POLICY_NAME)
                .withNamespace(namespace)
                .addToLabels(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE)
                .endMetadata()
                .withNewSpec()
                .withNewPodSelector()
                .addToMatchLabels(NETWORK_LABEL, NETWORK_NONE_VALUE)
                .endPodSelector()
                .withPolicyTypes("Ingress", "Egress")
                .endSpec()
                .build();
    }

    /** Whether {@code policy} denies every ingress and egress of the pods labelled for network mode none. */
    static boolean deniesAll(NetworkPolicy policy) {
        var spec = policy.getSpec();
        return spec != null
                && spec.getPodSelector() != null
                && Map.of(NETWORK_LABEL, NETWORK_NONE_VALUE)
                        .equals(spec.getPodSelector().getMatchLabels())
                && (spec.getPodSelector().getMatchExpressions() == null
                        || spec.getPodSelector().getMatchExpressions().isEmpty())
                && spec.getPolicyTypes() != null
                && spec.getPolicyTypes().containsAll(List.of("Ingress", "Egress"))
                && (spec.getIngress() == null || spec.getIngress().isEmpty())
                && (spec.getEgress() == null || spec.getEgress().isEmpty());
    }

    static boolean networkNone(LaunchInput launch) {
        return launch.policy().staticPolicy().networkMode() == NetworkMode.NONE;
    }

    /** The container security settings of {@code policy}; null when it asks for none. */
    static SecurityContext securityContext(StaticPolicy policy) {
        SecurityContextBuilder builder = new SecurityContextBuilder();
        boolean any = false;
        if (policy.readOnlyRootFilesystem()) {
            builder.withReadOnlyRootFilesystem(true);
            any = true;
        }
        if (policy.noNewPrivileges()) {
            builder.withAllowPrivilegeEscalation(false);
            any = true;
        }
        if (!policy.dropCapabilities().isEmpty()) {
            builder.withNewCapabilities()
                    .withDrop(List.copyOf(new TreeSet<>(policy.dropCapabilities())))
                    .endCapabilities();
            any = true;
        }
        return any ? builder.build() : null;
    }

    /** Requests from the spec, limits from the policy; null when there are neither. */
    static ResourceRequirements resources(ResourceRequests requests, StaticPolicy policy) {
        Map<String, Quantity> requestMap = new TreeMap<>();
        if (requests.memoryBytes() > 0) {
            requestMap.put("memory", new Quantity(Long.toString(requests.memoryBytes())));
        }
        if (requests.milliCpus() > 0) {
            requestMap.put("cpu", new Quantity(requests.milliCpus() + "m"));
        }
        Map<String, Quantity> limitMap = new TreeMap<>();
        if (policy.memoryLimitBytes() > 0) {
            limitMap.put("memory", new Quantity(Long.toString(policy.memoryLimitBytes())));
        }
        if (policy.cpuLimitMillis() > 0) {
            limitMap.put("cpu", new Quantity(policy.cpuLimitMillis() + "m"));
        }
        if (requestMap.isEmpty() && limitMap.isEmpty()) {
            return null;
        }
        return new ResourceRequirementsBuilder()
                .withRequests(requestMap.isEmpty() ? null : requestMap)
                .withLimits(limitMap.isEmpty() ? null : limitMap)
                .build();
    }

    private static ResourceRequests requestsOf(ResourceRequirements resources) {
        if (resources == null || resources.getRequests() == null) {
            return ResourceRequests.NONE;
        }
        Quantity memory = resources.getRequests().get("memory");
        Quantity cpu = resources.getRequests().get("cpu");
        long memoryBytes =
                memory == null ? 0 : Quantity.getAmountInBytes(memory).longValueExact();
        long milliCpus =
                cpu == null ? 0 : cpu.getNumericalAmount().movePointRight(3).longValueExact();
        return new ResourceRequests(memoryBytes, milliCpus);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> podTemplateSpec(GenericKubernetesResource sandbox) {
        Object template = SandboxObjects.spec(sandbox).get("podTemplate");
        if (template instanceof Map<?, ?> templateMap && templateMap.get("spec") instanceof Map<?, ?> spec) {
            return (Map<String, Object>) spec;
        }
        return Map.of();
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> toMap(Object value) {
        return serialization.convertValue(value, Map.class);
    }

    private List<Object> toList(List<Container> containers) {
        List<Object> list = new ArrayList<>();
        for (Container container : containers) {
            list.add(toMap(container));
        }
        return list;
    }
}
