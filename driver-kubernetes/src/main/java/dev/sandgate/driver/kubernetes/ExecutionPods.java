package dev.sandgate.driver.kubernetes;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Finds the pod of one execution of a sandbox and pins it by UID, for exec and logs.
 *
 * <p>The Agent Sandbox controller names a Sandbox's pod after the Sandbox, so every execution's pod has the same name,
 * and the API's {@code pods/exec} and {@code pods/log} address a pod by name only. The driver therefore resolves the
 * Sandbox by id, requires its generation stamp, reads the pod and checks that it belongs to that Sandbox (owner UID)
 * and carries that generation, and remembers the pod's UID. Once the exec or log stream is open, {@link
 * #requireSamePod} reads the pod again: the stream reached the pinned pod exactly when that pod still carries the
 * pinned UID, because a deleted object's UID never comes back and names are unique among existing objects (the pod
 * named so when the API server opened the stream, between the two reads, was the pinned one).
 */
final class ExecutionPods {
    /** The sandbox's container in the pod (see SandboxManifests). */
    static final String CONTAINER = SandboxManifests.CONTAINER;

    private static final String RUNNING = "running";

    private final KubernetesClient client;
    private final SandboxApi api;
    private final SandboxApiVersion version;

    ExecutionPods(KubernetesClient client, SandboxApi api, SandboxApiVersion version) {
        this.client = requireNonNull(client, "client is null");
        this.api = requireNonNull(api, "api is null");
        this.version = requireNonNull(version, "version is null");
    }

    /** The pod of one execution, pinned by its UID. */
    record PinnedPod(SandboxRef ref, long generation, String namespace, String name, String uid) {}

    /**
     * The pod of execution {@code generation} of {@code ref}: NOT_FOUND without the sandbox, FAILED_PRECONDITION on an
     * identity mismatch, with a {@code generation} mismatch when the Sandbox carries another generation, and with a
     * {@code running} mismatch when {@code requireRunning} and the execution does not run, or when its pod is gone
     * (Kubernetes removes a stopped execution's pod, and its output with it).
     */
    PinnedPod pin(SandboxRef ref, long generation, boolean requireRunning) {
        SandboxApi.Located sandbox = api.resolve(ref);
        long actual = sandbox.stamps().generation();
        if (actual != generation) {
            throw DriverException.generationMismatch(ref, generation, actual);
        }
        if (SandboxObjects.beingDeleted(sandbox.object())) {
            throw notRunning(ref, generation, "its Sandbox is being deleted");
        }
        SandboxState state = SandboxObjects.read(sandbox.object(), version).state();
        if (requireRunning && state != SandboxState.RUNNING) {
            throw notRunning(ref, generation, "it is " + state);
        }
        Pod pod = read(sandbox.namespace(), sandbox.name())
                .orElseThrow(() -> notRunning(ref, generation, "it has no pod (a stopped execution's pod is deleted)"));
        if (!ownedBy(pod, sandbox.uid())
                || !Objects.equals(labels(pod).get(Labels.GENERATION), Long.toString(generation))
                || !ref.id().equals(labels(pod).get(Labels.SANDBOX_ID))) {
            throw notRunning(
                    ref,
                    generation,
                    "its pod is not up yet (pod " + pod.getMetadata().getName() + " belongs to another execution)");
        }
        if (requireRunning
                && (pod.getMetadata().getDeletionTimestamp() != null
                        || pod.getStatus() == null
                        || !"Running".equals(pod.getStatus().getPhase()))) {
            throw notRunning(ref, generation, "its pod is not running");
        }
        return new PinnedPod(
                ref,
                generation,
                sandbox.namespace(),
                pod.getMetadata().getName(),
                pod.getMetadata().getUid());
    }

    /**
     * After the stream to {@code pinned} opened: FAILED_PRECONDITION unless the pod of that name still has the
     * pinned UID (then the stream reached it, see the class comment); the caller closes the stream.
     */
    void requireSamePod(PinnedPod pinned) {
        Optional<Pod> now = read(pinned.namespace(), pinned.name());
        String uid = now.map(pod -> pod.getMetadata().getUid()).orElse("");
        if (!pinned.uid().equals(uid)) {
            throw new DriverException(
                    DriverErrorCode.FAILED_PRECONDITION,
                    "the pod of execution generation " + pinned.generation() + " of sandbox "
                            + pinned.ref().id()
                            + " (uid " + pinned.uid() + ") was " + (uid.isEmpty() ? "removed" : "replaced")
                            + " while the stream was being opened; the stream was closed",
                    List.of(new Mismatch(RUNNING, "true", "false"), new Mismatch("backend_id", pinned.uid(), uid)),
                    null);
        }
    }

    /**
     * Whether the pinned pod still exists, is not being deleted, and its container has not terminated: when a
     * followed log ends, the execution ended unless this holds.
     */
    boolean stillRuns(PinnedPod pinned) {
        Optional<Pod> now = read(pinned.namespace(), pinned.name());
        if (now.isEmpty()
                || !pinned.uid().equals(now.get().getMetadata().getUid())
                || now.get().getMetadata().getDeletionTimestamp() != null) {
            return false;
        }
        Pod pod = now.get();
        if (pod.getStatus() == null || !"Running".equals(pod.getStatus().getPhase())) {
            return false;
        }
        return pod.getStatus().getContainerStatuses() == null
                || pod.getStatus().getContainerStatuses().stream()
                        .filter(status -> CONTAINER.equals(status.getName()))
                        .noneMatch(status ->
                                status.getState() != null && status.getState().getTerminated() != null);
    }

    private Optional<Pod> read(String namespace, String name) {
        return Optional.ofNullable(KubernetesErrors.call(
                "read pod " + namespace + "/" + name,
                () -> client.pods().inNamespace(namespace).withName(name).get()));
    }

    private static boolean ownedBy(Pod pod, String uid) {
        return pod.getMetadata().getOwnerReferences().stream().anyMatch(owner -> uid.equals(owner.getUid()));
    }

    private static Map<String, String> labels(Pod pod) {
        return Optional.ofNullable(pod.getMetadata().getLabels()).orElse(Map.of());
    }

    static DriverException notRunning(SandboxRef ref, long generation, String why) {
        return new DriverException(
                DriverErrorCode.FAILED_PRECONDITION,
                "execution generation " + generation + " of sandbox " + ref.id() + " does not run: " + why,
                List.of(new Mismatch(RUNNING, "true", "false")),
                null);
    }
}
