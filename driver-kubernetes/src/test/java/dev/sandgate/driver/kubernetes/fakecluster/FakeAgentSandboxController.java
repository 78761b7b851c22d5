package dev.sandgate.driver.kubernetes.fakecluster;

import static java.util.Objects.requireNonNull;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;
import io.fabric8.kubernetes.api.model.PersistentVolumeClaim;
import io.fabric8.kubernetes.api.model.PersistentVolumeClaimBuilder;
import io.fabric8.kubernetes.api.model.PersistentVolumeClaimSpec;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stand-in for the Agent Sandbox controller and the parts of kube-controller-manager it relies on, for the mock
 * API server. It is test code, separate from the driver, and does what the real ones do with the objects the driver
 * writes:
 *
 * <ul>
 *   <li>for each of a Sandbox's {@code volumeClaimTemplates}, a PersistentVolumeClaim named {@code <template>-<sandbox
 *       name>}, owned by the Sandbox, kept while the Sandbox is suspended;
 *   <li>while the run mode asks for it (v1beta1 {@code operatingMode: Running}, v1alpha1 {@code replicas: 1}), a pod
 *       named after the Sandbox from its {@code podTemplate}, owned by it, with the claims mounted; the pod is reported
 *       Running and Ready (there is no kubelet: nothing runs);
 *   <li>status conditions as the real controller writes them, with {@code observedGeneration}: {@code Ready} False
 *       (DependenciesNotReady) while the pod comes up, then True; when suspended, the pod deleted and {@code
 *       Suspended} True (PodTerminated) with {@code Ready} False (SandboxSuspended); v1alpha1 also {@code
 *       status.replicas};
 *   <li>the garbage collector's part: when a Sandbox is being deleted in the foreground it deletes the Sandbox's
 *       dependents (by owner reference UID) and then removes the {@code foregroundDeletion} finalizer; dependents of
 *       a Sandbox deleted in the background are deleted once it is gone.
 * </ul>
 *
 * Status updates carry the resourceVersion read, so a concurrent change of the Sandbox makes them fail with 409 and
 * the Sandbox is reconciled again, as a controller-runtime reconciler would.
 */
public final class FakeAgentSandboxController implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(FakeAgentSandboxController.class);

    private final KubernetesClient client;
    private final ResourceDefinitionContext sandboxes;
    private final boolean v1alpha1;
    private final DelayQueue<Key> queue = new DelayQueue<>();
    private final Set<String> queued = ConcurrentHashMap.newKeySet();
    private final Map<String, String> uidsByKey = new ConcurrentHashMap<>();
    private final Thread worker;
    private volatile SharedIndexInformer<GenericKubernetesResource> informer;
    private volatile boolean closed;

    public FakeAgentSandboxController(KubernetesClient client, ResourceDefinitionContext sandboxes) {
        this.client = requireNonNull(client, "client is null");
        this.sandboxes = requireNonNull(sandboxes, "sandboxes is null");
        this.v1alpha1 = "v1alpha1".equals(sandboxes.getVersion());
        this.worker = new Thread(this::work, "fake-agent-sandbox-controller");
        this.worker.setDaemon(true);
    }

    public void start() {
        informer = client.genericKubernetesResources(sandboxes).inAnyNamespace().inform(new Handler());
        worker.start();
    }

    @Override
    public void close() {
        closed = true;
        if (informer != null) {
            informer.close();
        }
        worker.interrupt();
        try {
            worker.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private final class Handler implements ResourceEventHandler<GenericKubernetesResource> {
        @Override
        public void onAdd(GenericKubernetesResource sandbox) {
            enqueue(key(sandbox), 0);
        }

        @Override
        public void onUpdate(GenericKubernetesResource before, GenericKubernetesResource after) {
            enqueue(key(after), 0);
        }

        @Override
        public void onDelete(GenericKubernetesResource sandbox, boolean finalStateUnknown) {
            enqueue(key(sandbox), 0);
        }
    }

    private static String key(HasMetadata object) {
        return object.getMetadata().getNamespace() + "/" + object.getMetadata().getName();
    }

    private void enqueue(String key, long delayMillis) {
        if (queued.add(key)) {
            queue.add(new Key(key, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMillis)));
        }
    }

    private void work() {
        while (!closed) {
            Key next;
            try {
                next = queue.take();
            } catch (InterruptedException e) {
                return;
            }
            queued.remove(next.key());
            try {
                if (reconcile(next.key())) {
                    enqueue(next.key(), 5);
                }
            } catch (KubernetesClientException e) {
                if (closed) {
                    return;
                }
                log.debug("reconcile of {} failed ({}); again", next.key(), e.getCode());
                enqueue(next.key(), 10);
            }
        }
    }

    /** Reconciles one Sandbox; returns whether it needs another round. */
    private boolean reconcile(String key) {
        String namespace = key.substring(0, key.indexOf('/'));
        String name = key.substring(key.indexOf('/') + 1);
        GenericKubernetesResource sandbox = client.genericKubernetesResources(sandboxes)
                .inNamespace(namespace)
                .withName(name)
                .get();
        if (sandbox == null) {
            String uid = uidsByKey.remove(key);
            if (uid != null) {
                deleteDependents(namespace, uid);
            }
            return false;
        }
        String uid = sandbox.getMetadata().getUid();
        String previousUid = uidsByKey.put(key, uid);
        if (previousUid != null && !previousUid.equals(uid)) {
            deleteDependents(namespace, previousUid); // replaced: the old one's dependents are orphans
        }
        if (sandbox.getMetadata().getDeletionTimestamp() != null) {
            if (sandbox.getMetadata().getFinalizers().contains(PreconditionEnforcingDispatcher.FOREGROUND_FINALIZER)) {
                deleteDependents(namespace, uid);
                List<String> finalizers = new ArrayList<>(sandbox.getMetadata().getFinalizers());
                finalizers.remove(PreconditionEnforcingDispatcher.FOREGROUND_FINALIZER);
                Map<String, Object> patch = Map.of(
                        "metadata",
                        Map.of(
                                "resourceVersion",
                                sandbox.getMetadata().getResourceVersion(),
                                "finalizers",
                                finalizers));
                client.genericKubernetesResources(sandboxes)
                        .inNamespace(namespace)
                        .withName(name)
                        .patch(
                                PatchContext.of(PatchType.JSON_MERGE),
                                serialization().asJson(patch));
            }
            return false;
        }
        Optional<String> claimProblem = reconcileClaims(sandbox);
        long generation = sandbox.getMetadata().getGeneration();
        List<Map<String, Object>> conditions = conditions(sandbox);
        boolean again = false;
        if (claimProblem.isPresent()) {
            setCondition(
                    conditions, "Ready", "False", "ReconcilerError", "Error seen: " + claimProblem.get(), generation);
        } else if (running(sandbox)) {
            Pod pod = client.pods().inNamespace(namespace).withName(name).get();
            if (pod == null) {
                client.pods().inNamespace(namespace).resource(pod(sandbox)).create();
                setCondition(
                        conditions,
                        "Ready",
                        "False",
                        "DependenciesNotReady",
                        "Pod exists with phase: Pending",
                        generation);
                again = true; // the fake kubelet reports it ready in the next round
            } else if (!ownedBy(pod, uid)) {
                setCondition(
                        conditions,
                        "Ready",
                        "False",
                        "ReconcilerError",
                        "Pod is not owned by this Sandbox",
                        generation);
                again = true;
            } else {
                setCondition(conditions, "Ready", "True", "DependenciesReady", "Pod is Ready", generation);
                if (conditions.stream().anyMatch(condition -> "Suspended".equals(condition.get("type")))) {
                    setCondition(conditions, "Suspended", "False", "NotSuspended", "", generation);
                }
            }
        } else {
            Pod pod = client.pods().inNamespace(namespace).withName(name).get();
            if (pod != null && ownedBy(pod, uid)) {
                client.pods().inNamespace(namespace).withName(name).delete();
                setCondition(conditions, "Suspended", "False", "PodTerminating", "", generation);
                again = true;
            } else {
                setCondition(conditions, "Suspended", "True", "PodTerminated", "", generation);
            }
            setCondition(conditions, "Ready", "False", "SandboxSuspended", "Sandbox is suspended", generation);
        }
        writeStatus(sandbox, conditions);
        return again;
    }

    private boolean running(GenericKubernetesResource sandbox) {
        Map<String, Object> spec = map(sandbox.getAdditionalProperties().get("spec"));
        if (v1alpha1) {
            Object replicas = spec.get("replicas");
            return !(replicas instanceof Number number) || number.intValue() != 0;
        }
        Object mode = spec.get("operatingMode");
        return mode == null || "Running".equals(mode);
    }

    /** Creates the missing claims; returns a problem when a claim of that name belongs to another owner. */
    private Optional<String> reconcileClaims(GenericKubernetesResource sandbox) {
        String namespace = sandbox.getMetadata().getNamespace();
        Map<String, Object> spec = map(sandbox.getAdditionalProperties().get("spec"));
        Object templates = spec.get("volumeClaimTemplates");
        if (!(templates instanceof List<?> list)) {
            return Optional.empty();
        }
        for (Object item : list) {
            Map<String, Object> template = map(item);
            Map<String, Object> metadata = map(template.get("metadata"));
            String claimName =
                    metadata.get("name") + "-" + sandbox.getMetadata().getName();
            PersistentVolumeClaim existing = client.persistentVolumeClaims()
                    .inNamespace(namespace)
                    .withName(claimName)
                    .get();
            if (existing != null) {
                if (!ownedBy(existing, sandbox.getMetadata().getUid())) {
                    return Optional.of("PVC \"" + claimName + "\" is owned by another controller");
                }
                continue;
            }
            client.persistentVolumeClaims()
                    .inNamespace(namespace)
                    .resource(new PersistentVolumeClaimBuilder()
                            .withNewMetadata()
                            .withName(claimName)
                            .withNamespace(namespace)
                            .withLabels(stringMap(metadata.get("labels")))
                            .withOwnerReferences(ownerReference(sandbox))
                            .endMetadata()
                            .withSpec(
                                    serialization().convertValue(template.get("spec"), PersistentVolumeClaimSpec.class))
                            .withNewStatus()
                            .withPhase("Bound")
                            .endStatus()
                            .build())
                    .create();
        }
        return Optional.empty();
    }

    private Pod pod(GenericKubernetesResource sandbox) {
        Map<String, Object> spec = map(sandbox.getAdditionalProperties().get("spec"));
        Map<String, Object> template = map(spec.get("podTemplate"));
        Map<String, Object> templateMetadata = map(template.get("metadata"));
        PodSpec podSpec = serialization().convertValue(template.get("spec"), PodSpec.class);
        List<io.fabric8.kubernetes.api.model.Volume> volumes =
                new ArrayList<>(podSpec.getVolumes() == null ? List.of() : podSpec.getVolumes());
        if (spec.get("volumeClaimTemplates") instanceof List<?> claims) {
            for (Object item : claims) {
                String templateName =
                        String.valueOf(map(map(item).get("metadata")).get("name"));
                volumes.add(new VolumeBuilder()
                        .withName(templateName)
                        .withNewPersistentVolumeClaim()
                        .withClaimName(
                                templateName + "-" + sandbox.getMetadata().getName())
                        .endPersistentVolumeClaim()
                        .build());
            }
        }
        podSpec.setVolumes(volumes);
        return new PodBuilder()
                .withNewMetadata()
                .withName(sandbox.getMetadata().getName())
                .withNamespace(sandbox.getMetadata().getNamespace())
                .withLabels(stringMap(templateMetadata.get("labels")))
                .withAnnotations(stringMap(templateMetadata.get("annotations")))
                .withOwnerReferences(ownerReference(sandbox))
                .endMetadata()
                .withSpec(podSpec)
                .withNewStatus()
                .withPhase("Running")
                .addNewCondition()
                .withType("Ready")
                .withStatus("True")
                .endCondition()
                .addNewPodIP()
                .withIp("192.0.2.10")
                .endPodIP()
                .endStatus()
                .build();
    }

    private static OwnerReference ownerReference(GenericKubernetesResource sandbox) {
        return new OwnerReferenceBuilder()
                .withApiVersion(sandbox.getApiVersion())
                .withKind(sandbox.getKind())
                .withName(sandbox.getMetadata().getName())
                .withUid(sandbox.getMetadata().getUid())
                .withController(true)
                .withBlockOwnerDeletion(true)
                .build();
    }

    private static boolean ownedBy(HasMetadata object, String uid) {
        return object.getMetadata().getOwnerReferences().stream().anyMatch(owner -> uid.equals(owner.getUid()));
    }

    /** The garbage collector's work: everything in the namespace that names {@code ownerUid} as an owner. */
    private void deleteDependents(String namespace, String ownerUid) {
        List<HasMetadata> dependents = new ArrayList<>();
        dependents.addAll(client.pods().inNamespace(namespace).list().getItems());
        dependents.addAll(
                client.persistentVolumeClaims().inNamespace(namespace).list().getItems());
        dependents.addAll(client.secrets().inNamespace(namespace).list().getItems());
        for (HasMetadata dependent : dependents) {
            if (ownedBy(dependent, ownerUid)) {
                client.resource(dependent).delete();
            }
        }
    }

    private static List<Map<String, Object>> conditions(GenericKubernetesResource sandbox) {
        List<Map<String, Object>> conditions = new ArrayList<>();
        Object status = sandbox.getAdditionalProperties().get("status");
        if (map(status).get("conditions") instanceof List<?> list) {
            for (Object item : list) {
                conditions.add(new LinkedHashMap<>(map(item)));
            }
        }
        return conditions;
    }

    private static void setCondition(
            List<Map<String, Object>> conditions,
            String type,
            String status,
            String reason,
            String message,
            long observedGeneration) {
        Map<String, Object> condition = conditions.stream()
                .filter(existing -> type.equals(existing.get("type")))
                .findFirst()
                .orElseGet(() -> {
                    Map<String, Object> created = new LinkedHashMap<>();
                    created.put("type", type);
                    conditions.add(created);
                    return created;
                });
        if (!status.equals(condition.get("status"))) {
            condition.put(
                    "lastTransitionTime",
                    Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
        }
        condition.put("status", status);
        condition.put("reason", reason);
        condition.put("message", message);
        condition.put("observedGeneration", observedGeneration);
    }

    private void writeStatus(GenericKubernetesResource sandbox, List<Map<String, Object>> conditions) {
        Map<String, Object> status =
                new LinkedHashMap<>(map(sandbox.getAdditionalProperties().get("status")));
        status.put("conditions", conditions);
        if (v1alpha1) {
            status.put("replicas", running(sandbox) ? 1 : 0);
        }
        if (status.equals(map(sandbox.getAdditionalProperties().get("status")))) {
            return;
        }
        GenericKubernetesResource updated = serialization().clone(sandbox);
        updated.getAdditionalProperties().put("status", status);
        client.genericKubernetesResources(sandboxes)
                .inNamespace(sandbox.getMetadata().getNamespace())
                .resource(updated)
                .updateStatus();
    }

    private KubernetesSerialization serialization() {
        return client.getKubernetesSerialization();
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object value) {
        return value instanceof Map<?, ?> map ? (Map<String, Object>) map : Map.of();
    }

    private static Map<String, String> stringMap(Object value) {
        Map<String, String> result = new LinkedHashMap<>();
        map(value).forEach((key, item) -> result.put(key, String.valueOf(item)));
        return result;
    }

    private record Key(String key, long dueNanos) implements Delayed {
        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(dueNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed other) {
            return Long.compare(getDelay(TimeUnit.NANOSECONDS), other.getDelay(TimeUnit.NANOSECONDS));
        }
    }
}
