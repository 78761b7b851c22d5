package dev.sandgate.driver.kubernetes;

import static java.util.Objects.requireNonNull;
import static org.awaitility.Awaitility.await;

import dev.sandgate.conformance.AppliedPolicy;
import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.BackendResource;
import dev.sandgate.driver.kubernetes.fakecluster.MockCluster;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StaticPolicy;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvFromSource;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.LabelSelectorRequirement;
import io.fabric8.kubernetes.api.model.PersistentVolumeClaim;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicySpec;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The conformance kit's view of the fake cluster, through a plain fabric8 client (never through the driver).
 *
 * <p>A sandbox's runtime resource is its Sandbox object: {@link BackendResource#backendId()} is its UID, {@link
 * BackendResource#running()} is the controller's current {@code Ready=True} while the run mode asks for running, and
 * the stamps are its labels with the name and policy digest annotations merged in. {@link #resourcesOfGateway} also
 * reports the pods, volume claims and Secrets carrying the gateway's label, so a leaked dependent is caught too.
 *
 * <p><b>What "workspace persists" means against the mock.</b> Nothing runs in the fake cluster, so nothing can write
 * a file into a volume. The marker is written where a volume's contents would survive: as an annotation on the
 * sandbox's PersistentVolumeClaim object ({@code workspace-<sandbox name>}), and it is read back only from the same
 * claim, by UID. A driver that lets the claim be deleted and recreated between executions (deleting the Sandbox,
 * say) loses the marker, exactly as it would lose the files on a real cluster.
 */
final class KubernetesBackendProbe implements BackendProbe {
    static final String MARKER_ANNOTATION = "probe.sandgate.dev/workspace-marker";
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(30);

    private final KubernetesClient client;
    private final ResourceDefinitionContext sandboxes;
    private final boolean sharedNamespace;
    private final String namespace;
    private final String namespacePrefix;
    private final String image;
    private final Set<String> planted = ConcurrentHashMap.newKeySet();
    private final Map<String, String> markerClaimUids = new ConcurrentHashMap<>();

    KubernetesBackendProbe(
            MockCluster cluster, boolean sharedNamespace, String namespace, String namespacePrefix, String image) {
        this.client = requireNonNull(cluster, "cluster is null").admin();
        this.sandboxes = cluster.sandboxes();
        this.sharedNamespace = sharedNamespace;
        this.namespace = requireNonNull(namespace, "namespace is null");
        this.namespacePrefix = requireNonNull(namespacePrefix, "namespacePrefix is null");
        this.image = requireNonNull(image, "image is null");
    }

    private String namespaceOf(SandboxRef ref) {
        return sharedNamespace ? namespace : ResourceNames.workspaceNamespace(namespacePrefix, ref.workspace());
    }

    @Override
    public BackendResource plant(SandboxRef ref, String gatewayId, String policyDigest) {
        return plant(ref, gatewayId, policyDigest, true);
    }

    /** Planted suspended, as the driver stops a sandbox; returned once the controller reports it Suspended. */
    @Override
    public BackendResource plantStopped(SandboxRef ref, String gatewayId, String policyDigest) {
        return plant(ref, gatewayId, policyDigest, false);
    }

    /** Named as the driver names {@code ref}'s Sandbox ({@link ResourceNames#sandboxName}), in its namespace. */
    private BackendResource plant(SandboxRef ref, String gatewayId, String policyDigest, boolean running) {
        String sandboxNamespace = namespaceOf(ref);
        Map<String, String> labels = new TreeMap<>();
        labels.put(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE);
        labels.put(Labels.GATEWAY_ID, gatewayId);
        labels.put(Labels.SANDBOX_ID, ref.id());
        labels.put(Labels.WORKSPACE, ref.workspace());
        labels.put(Labels.GENERATION, "1");
        Map<String, String> annotations = Map.of(Labels.NAME, ref.name(), Labels.POLICY_DIGEST, policyDigest);
        Map<String, Object> spec = new TreeMap<>();
        spec.put(
                "podTemplate",
                Map.of(
                        "metadata",
                        Map.of("labels", labels, "annotations", annotations),
                        "spec",
                        Map.of("containers", List.of(Map.of("name", "sandbox", "image", image)))));
        spec.put(
                "volumeClaimTemplates",
                List.of(Map.of(
                        "metadata",
                        Map.of("name", ResourceNames.WORKSPACE_VOLUME, "labels", labels),
                        "spec",
                        Map.of(
                                "accessModes",
                                List.of("ReadWriteOnce"),
                                "resources",
                                Map.of("requests", Map.of("storage", "1Gi"))))));
        if ("v1alpha1".equals(sandboxes.getVersion())) {
            spec.put("replicas", running ? 1 : 0);
        } else {
            spec.put("operatingMode", running ? "Running" : "Suspended");
        }
        planted.add(ref.id());
        GenericKubernetesResource created = client.genericKubernetesResources(sandboxes)
                .inNamespace(sandboxNamespace)
                .resource(new GenericKubernetesResourceBuilder()
                        .withApiVersion(sandboxes.getGroup() + "/" + sandboxes.getVersion())
                        .withKind(sandboxes.getKind())
                        .withNewMetadata()
                        .withName(ResourceNames.sandboxName(sharedNamespace, ref))
                        .withNamespace(sandboxNamespace)
                        .withLabels(labels)
                        .withAnnotations(annotations)
                        .endMetadata()
                        .withAdditionalProperties(Map.of("spec", spec))
                        .build())
                .create();
        return awaitState(created, running);
    }

    /** Waits until the controller reports the planted Sandbox Ready, or Suspended, for its current spec. */
    private BackendResource awaitState(GenericKubernetesResource created, boolean ready) {
        return await("the planted Sandbox " + created.getMetadata().getName() + " " + (ready ? "Ready" : "Suspended"))
                .atMost(READY_TIMEOUT)
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> inState(created, ready), Optional::isPresent)
                .orElseThrow();
    }

    /** The planted Sandbox (the same object, by uid) as a resource, once the controller reports it in that state. */
    private Optional<BackendResource> inState(GenericKubernetesResource created, boolean ready) {
        GenericKubernetesResource now = client.genericKubernetesResources(sandboxes)
                .inNamespace(created.getMetadata().getNamespace())
                .withName(created.getMetadata().getName())
                .get();
        if (now == null
                || !now.getMetadata().getUid().equals(created.getMetadata().getUid())) {
            return Optional.empty();
        }
        return Optional.of(toResource(now)).filter(resource -> ready ? resource.running() : suspended(now));
    }

    @Override
    public List<BackendResource> resources(String sandboxId) {
        return sandboxesLabelled(Labels.SANDBOX_ID, sandboxId).stream()
                .map(KubernetesBackendProbe::toResource)
                .toList();
    }

    @Override
    public List<BackendResource> resourcesOfGateway(String gatewayId) {
        List<BackendResource> resources = new ArrayList<>();
        sandboxesLabelled(Labels.GATEWAY_ID, gatewayId).forEach(sandbox -> resources.add(toResource(sandbox)));
        List<HasMetadata> dependents = new ArrayList<>();
        dependents.addAll(client.pods()
                .inAnyNamespace()
                .withLabel(Labels.GATEWAY_ID, gatewayId)
                .list()
                .getItems());
        dependents.addAll(client.persistentVolumeClaims()
                .inAnyNamespace()
                .withLabel(Labels.GATEWAY_ID, gatewayId)
                .list()
                .getItems());
        dependents.addAll(client.secrets()
                .inAnyNamespace()
                .withLabel(Labels.GATEWAY_ID, gatewayId)
                .list()
                .getItems());
        for (HasMetadata dependent : dependents) {
            resources.add(new BackendResource(
                    dependent.getKind() + " " + dependent.getMetadata().getNamespace() + "/"
                            + dependent.getMetadata().getName() + " "
                            + dependent.getMetadata().getUid(),
                    false,
                    dependent.getMetadata().getLabels()));
        }
        return resources;
    }

    @Override
    public void remove(String sandboxId) {
        for (GenericKubernetesResource sandbox : sandboxesLabelled(Labels.SANDBOX_ID, sandboxId)) {
            client.genericKubernetesResources(sandboxes)
                    .inNamespace(sandbox.getMetadata().getNamespace())
                    .withName(sandbox.getMetadata().getName())
                    .delete();
        }
        // Everything else that carries the id, at once (the garbage collector would take its time).
        client.pods().inAnyNamespace().withLabel(Labels.SANDBOX_ID, sandboxId).delete();
        client.persistentVolumeClaims()
                .inAnyNamespace()
                .withLabel(Labels.SANDBOX_ID, sandboxId)
                .delete();
        client.secrets()
                .inAnyNamespace()
                .withLabel(Labels.SANDBOX_ID, sandboxId)
                .delete();
        planted.remove(sandboxId);
        markerClaimUids.remove(sandboxId);
    }

    @Override
    public void writeWorkspaceMarker(SandboxRef ref, String marker) {
        PersistentVolumeClaim claim = workspaceClaimOfRunning(ref);
        client.persistentVolumeClaims()
                .inNamespace(claim.getMetadata().getNamespace())
                .withName(claim.getMetadata().getName())
                .patch(
                        PatchContext.of(PatchType.JSON_MERGE),
                        client.getKubernetesSerialization()
                                .asJson(Map.of("metadata", Map.of("annotations", Map.of(MARKER_ANNOTATION, marker)))));
        markerClaimUids.put(ref.id(), claim.getMetadata().getUid());
    }

    @Override
    public Optional<String> readWorkspaceMarker(SandboxRef ref) {
        PersistentVolumeClaim claim = workspaceClaimOfRunning(ref);
        if (!claim.getMetadata().getUid().equals(markerClaimUids.get(ref.id()))) {
            return Optional.empty(); // another claim than the one written: the workspace's data is gone
        }
        return Optional.ofNullable(claim.getMetadata().getAnnotations())
                .map(annotations -> annotations.get(MARKER_ANNOTATION));
    }

    /**
     * What the sandbox's pod runs with: its one container's security context and limits, as the API server stores the
     * pod the controller made, and network mode none when the NetworkPolicies of its namespace that select the pod
     * isolate it both ways and allow nothing (policies are additive: one rule of any selecting policy opens traffic).
     */
    @Override
    public AppliedPolicy appliedPolicy(SandboxRef ref) {
        Pod pod = podOf(ref);
        Container container = onlyContainer(pod, ref);
        SecurityContext security =
                container.getSecurityContext() == null ? new SecurityContext() : container.getSecurityContext();
        // A privileged container keeps every capability and may gain privileges, whatever else its context says.
        boolean privileged = Boolean.TRUE.equals(security.getPrivileged());
        Set<String> dropped = new TreeSet<>();
        if (!privileged
                && security.getCapabilities() != null
                && security.getCapabilities().getDrop() != null) {
            for (String capability : security.getCapabilities().getDrop()) {
                String upper = capability.toUpperCase(Locale.ROOT);
                dropped.add(upper.startsWith("CAP_") ? upper.substring(4) : upper);
            }
        }
        Map<String, Quantity> limits =
                container.getResources() == null || container.getResources().getLimits() == null
                        ? Map.of()
                        : container.getResources().getLimits();
        long memoryBytes = limits.containsKey("memory")
                ? Quantity.getAmountInBytes(limits.get("memory")).longValueExact()
                : 0;
        long cpuMillis = limits.containsKey("cpu")
                ? Quantity.getAmountInBytes(limits.get("cpu"))
                        .multiply(BigDecimal.valueOf(1000))
                        .setScale(0, RoundingMode.CEILING)
                        .longValueExact()
                : 0;
        return AppliedPolicy.of(new StaticPolicy(
                Boolean.TRUE.equals(security.getReadOnlyRootFilesystem()),
                // NetworkPolicies do not apply to a pod on the host's network.
                !Boolean.TRUE.equals(pod.getSpec().getHostNetwork()) && isolated(pod)
                        ? NetworkMode.NONE
                        : NetworkMode.DEFAULT,
                dropped,
                !privileged && Boolean.FALSE.equals(security.getAllowPrivilegeEscalation()),
                memoryBytes,
                cpuMillis,
                0));
    }

    /**
     * The variables of the pod's container as the kubelet would set them: each {@code envFrom} source in order, then
     * {@code env} (which wins), resolving Secret and ConfigMap references. A Secret's {@code data} is base64; the mock
     * keeps {@code stringData} as written, which the real API server would have merged into {@code data}, so it is
     * read too and wins, as it does on a write.
     */
    @Override
    public Map<String, String> launchedEnvironment(SandboxRef ref) {
        Pod pod = podOf(ref);
        Container container = onlyContainer(pod, ref);
        String podNamespace = pod.getMetadata().getNamespace();
        Map<String, String> environment = new TreeMap<>();
        for (EnvFromSource source : Optional.ofNullable(container.getEnvFrom()).orElse(List.of())) {
            String prefix = Optional.ofNullable(source.getPrefix()).orElse("");
            if (source.getSecretRef() != null) {
                secretValues(podNamespace, source.getSecretRef().getName())
                        .forEach((key, value) -> environment.put(prefix + key, value));
            } else if (source.getConfigMapRef() != null) {
                ConfigMap map = client.configMaps()
                        .inNamespace(podNamespace)
                        .withName(source.getConfigMapRef().getName())
                        .get();
                if (map == null) {
                    throw new IllegalStateException("the pod of " + ref + " reads the missing ConfigMap "
                            + source.getConfigMapRef().getName());
                }
                Optional.ofNullable(map.getData())
                        .orElse(Map.of())
                        .forEach((key, value) -> environment.put(prefix + key, value));
            }
        }
        for (EnvVar variable : Optional.ofNullable(container.getEnv()).orElse(List.of())) {
            if (variable.getValueFrom() == null) {
                environment.put(
                        variable.getName(),
                        Optional.ofNullable(variable.getValue()).orElse(""));
            } else if (variable.getValueFrom().getSecretKeyRef() != null) {
                var key = variable.getValueFrom().getSecretKeyRef();
                environment.put(
                        variable.getName(),
                        secretValues(podNamespace, key.getName()).get(key.getKey()));
            } else if (variable.getValueFrom().getFieldRef() != null
                    && variable.getValueFrom().getFieldRef().getFieldPath().startsWith("metadata.labels['")) {
                String path = variable.getValueFrom().getFieldRef().getFieldPath();
                String label = path.substring("metadata.labels['".length(), path.length() - "']".length());
                environment.put(
                        variable.getName(),
                        Optional.ofNullable(pod.getMetadata().getLabels())
                                .map(labels -> labels.getOrDefault(label, ""))
                                .orElse(""));
            } else {
                throw new IllegalStateException("the probe does not resolve variable " + variable.getName()
                        + " of the pod of " + ref + " (neither a value, a Secret key nor a pod label)");
            }
        }
        return environment;
    }

    private Map<String, String> secretValues(String secretNamespace, String name) {
        Secret secret =
                client.secrets().inNamespace(secretNamespace).withName(name).get();
        if (secret == null) {
            throw new IllegalStateException("the pod reads the missing Secret " + secretNamespace + "/" + name);
        }
        Map<String, String> values = new TreeMap<>();
        Optional.ofNullable(secret.getData())
                .orElse(Map.of())
                .forEach((key, value) ->
                        values.put(key, new String(Base64.getDecoder().decode(value), StandardCharsets.UTF_8)));
        Optional.ofNullable(secret.getStringData()).ifPresent(values::putAll);
        return values;
    }

    /** The pod the controller made for the Sandbox object carrying {@code ref}'s id, owned by it. */
    private Pod podOf(SandboxRef ref) {
        List<GenericKubernetesResource> found = sandboxesLabelled(Labels.SANDBOX_ID, ref.id());
        if (found.size() != 1) {
            throw new IllegalStateException(found.size() + " Sandbox objects carry sandbox id " + ref.id());
        }
        GenericKubernetesResource sandbox = found.get(0);
        Pod pod = client.pods()
                .inNamespace(sandbox.getMetadata().getNamespace())
                .withName(sandbox.getMetadata().getName())
                .get();
        if (pod == null
                || pod.getMetadata().getOwnerReferences() == null
                || pod.getMetadata().getOwnerReferences().stream()
                        .noneMatch(owner -> sandbox.getMetadata().getUid().equals(owner.getUid()))) {
            throw new IllegalStateException("no pod of the Sandbox object of " + ref + " runs");
        }
        return pod;
    }

    private static Container onlyContainer(Pod pod, SandboxRef ref) {
        List<Container> containers = pod.getSpec().getContainers();
        if (containers == null || containers.size() != 1) {
            throw new IllegalStateException("the pod of " + ref + " has " + (containers == null ? 0 : containers.size())
                    + " containers; the probe reads exactly one");
        }
        return containers.get(0);
    }

    /** Whether the namespace's NetworkPolicies isolate {@code pod} for ingress and egress and allow it nothing. */
    private boolean isolated(Pod pod) {
        Map<String, String> podLabels = pod.getMetadata().getLabels() == null
                ? Map.of()
                : pod.getMetadata().getLabels();
        boolean ingressIsolated = false;
        boolean egressIsolated = false;
        for (NetworkPolicy policy : client.network()
                .networkPolicies()
                .inNamespace(pod.getMetadata().getNamespace())
                .list()
                .getItems()) {
            NetworkPolicySpec spec = policy.getSpec();
            if (spec == null || !selects(spec.getPodSelector(), podLabels)) {
                continue;
            }
            List<String> types =
                    spec.getPolicyTypes() == null || spec.getPolicyTypes().isEmpty()
                            // The API server's default: Ingress, plus Egress when the policy has egress rules.
                            ? (spec.getEgress() == null || spec.getEgress().isEmpty()
                                    ? List.of("Ingress")
                                    : List.of("Ingress", "Egress"))
                            : spec.getPolicyTypes();
            if (spec.getIngress() != null && !spec.getIngress().isEmpty()) {
                return false;
            }
            if (spec.getEgress() != null && !spec.getEgress().isEmpty()) {
                return false;
            }
            ingressIsolated |= types.contains("Ingress");
            egressIsolated |= types.contains("Egress");
        }
        return ingressIsolated && egressIsolated;
    }

    private static boolean selects(LabelSelector selector, Map<String, String> labels) {
        if (selector == null) {
            return false; // the API server requires a selector; an empty one ({}) selects every pod
        }
        if (selector.getMatchLabels() != null
                && !selector.getMatchLabels().entrySet().stream()
                        .allMatch(entry -> entry.getValue().equals(labels.get(entry.getKey())))) {
            return false;
        }
        if (selector.getMatchExpressions() != null) {
            for (LabelSelectorRequirement requirement : selector.getMatchExpressions()) {
                String value = labels.get(requirement.getKey());
                List<String> values = requirement.getValues() == null ? List.of() : requirement.getValues();
                boolean matches = switch (requirement.getOperator()) {
                    case "In" -> value != null && values.contains(value);
                    case "NotIn" -> value == null || !values.contains(value);
                    case "Exists" -> value != null;
                    case "DoesNotExist" -> value == null;
                    default ->
                        throw new IllegalStateException("unknown label selector operator " + requirement.getOperator());
                };
                if (!matches) {
                    return false;
                }
            }
        }
        return true;
    }

    /** The workspace claim of the running sandbox {@code ref}; a stopped sandbox cannot be written into. */
    private PersistentVolumeClaim workspaceClaimOfRunning(SandboxRef ref) {
        List<GenericKubernetesResource> found = sandboxesLabelled(Labels.SANDBOX_ID, ref.id());
        if (found.size() != 1) {
            throw new IllegalStateException(found.size() + " Sandbox objects carry sandbox id " + ref.id());
        }
        GenericKubernetesResource sandbox = found.get(0);
        if (!toResource(sandbox).running()) {
            throw new IllegalStateException("sandbox " + ref + " is not running: nothing can write its workspace");
        }
        String claimName =
                ResourceNames.workspaceClaimName(sandbox.getMetadata().getName());
        PersistentVolumeClaim claim = client.persistentVolumeClaims()
                .inNamespace(sandbox.getMetadata().getNamespace())
                .withName(claimName)
                .get();
        if (claim == null) {
            throw new IllegalStateException("the running sandbox " + ref + " has no claim " + claimName);
        }
        return claim;
    }

    private List<GenericKubernetesResource> sandboxesLabelled(String key, String value) {
        return client.genericKubernetesResources(sandboxes)
                .inAnyNamespace()
                .withLabel(key, value)
                .list()
                .getItems();
    }

    private static BackendResource toResource(GenericKubernetesResource sandbox) {
        Map<String, String> stamps = new TreeMap<>();
        Optional.ofNullable(sandbox.getMetadata().getLabels()).ifPresent(stamps::putAll);
        Map<String, String> annotations =
                Optional.ofNullable(sandbox.getMetadata().getAnnotations()).orElse(Map.of());
        for (String key : List.of(Labels.NAME, Labels.POLICY_DIGEST)) {
            if (annotations.containsKey(key)) {
                stamps.put(key, annotations.get(key));
            }
        }
        return new BackendResource(sandbox.getMetadata().getUid(), running(sandbox), stamps);
    }

    /** The controller reports the Sandbox Suspended for its current spec. */
    @SuppressWarnings("unchecked")
    private static boolean suspended(GenericKubernetesResource sandbox) {
        Object status = sandbox.getAdditionalProperties().get("status");
        if (!(status instanceof Map<?, ?> statusMap) || !(statusMap.get("conditions") instanceof List<?> conditions)) {
            return false;
        }
        long generation = sandbox.getMetadata().getGeneration();
        return conditions.stream()
                .map(condition -> (Map<String, Object>) condition)
                .anyMatch(condition -> "Suspended".equals(condition.get("type"))
                        && "True".equals(condition.get("status"))
                        && condition.get("observedGeneration") instanceof Number observed
                        && observed.longValue() == generation);
    }

    /** The controller reports the pod Ready for the Sandbox's current spec, which asks for a running pod. */
    @SuppressWarnings("unchecked")
    static boolean running(GenericKubernetesResource sandbox) {
        if (sandbox.getMetadata().getDeletionTimestamp() != null) {
            return false;
        }
        Map<String, Object> spec =
                (Map<String, Object>) sandbox.getAdditionalProperties().getOrDefault("spec", Map.of());
        boolean desired = spec.containsKey("replicas")
                ? ((Number) spec.get("replicas")).intValue() != 0
                : !"Suspended".equals(spec.get("operatingMode"));
        Object status = sandbox.getAdditionalProperties().get("status");
        if (!desired
                || !(status instanceof Map<?, ?> statusMap)
                || !(statusMap.get("conditions") instanceof List<?> conditions)) {
            return false;
        }
        long generation = sandbox.getMetadata().getGeneration();
        return conditions.stream()
                .map(condition -> (Map<String, Object>) condition)
                .anyMatch(condition -> "Ready".equals(condition.get("type"))
                        && "True".equals(condition.get("status"))
                        && condition.get("observedGeneration") instanceof Number observed
                        && observed.longValue() == generation);
    }

    @Override
    public void close() {
        for (String id : List.copyOf(planted)) {
            remove(id);
        }
    }
}
