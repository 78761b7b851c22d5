package dev.sandgate.driver.kubernetes;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.toolkit.ExecutionFacts;
import dev.sandgate.driver.toolkit.ExecutionFacts.Access;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.LogStream;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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

    // Logs under the driver's name, which operators filter on.
    private static final Logger log = LoggerFactory.getLogger(KubernetesDriver.class);
    private static final String RUNNING = "running";

    private final KubernetesClient client;
    private final SandboxApi api;
    private final SandboxApiVersion version;
    private final Duration requestTimeout;

    ExecutionPods(KubernetesClient client, SandboxApi api, SandboxApiVersion version, Duration requestTimeout) {
        this.client = requireNonNull(client, "client is null");
        this.api = requireNonNull(api, "api is null");
        this.version = requireNonNull(version, "version is null");
        this.requestTimeout = requireNonNull(requestTimeout, "requestTimeout is null");
    }

    /**
     * Runs the command in the pod of execution {@code generation}: the pod is pinned, the stream opened, and the pod
     * read again; the stream's output is let through only when the pod still has the pinned UID, else the stream is
     * closed and the exec refused (FAILED_PRECONDITION). The caller holds the sandbox's lock, so that its own stop or
     * start cannot replace the pod meanwhile.
     */
    ExecProcess exec(SandboxRef ref, long generation, ExecCommand command, ExecListener listener) {
        PinnedPod pod = pin(ref, generation, Access.EXEC);
        PodExec exec = admitted(pod, PodExec.open(client, pod, command, listener, requestTimeout));
        log.debug(
                "Exec in sandbox {} at generation {} (pod {}/{}, uid {})",
                ref,
                generation,
                pod.namespace(),
                pod.name(),
                pod.uid());
        return exec;
    }

    /** Reads the output of the pod of execution {@code generation}, pinned as for {@link #exec}. */
    LogStream logs(SandboxRef ref, long generation, LogQuery query, LogListener listener) {
        PinnedPod pod = pin(ref, generation, Access.LOGS);
        return admitted(pod, PodLogs.open(client, pod, query, listener, requestTimeout, () -> stillRuns(pod)));
    }

    /** A stream opened to a pinned pod by its name, held back until the pod is known to be the pinned one. */
    interface HeldStream {
        /** Lets the output through. */
        void admit();

        /** Closes the stream without a single callback. */
        void abandon();
    }

    /**
     * {@code stream}, just opened to {@code pod}'s name, admitted if the pod still has the pinned UID; else abandoned
     * and FAILED_PRECONDITION ({@link #requireSamePod}).
     */
    private <S extends HeldStream> S admitted(PinnedPod pod, S stream) {
        try {
            requireSamePod(pod);
        } catch (RuntimeException e) {
            stream.abandon();
            throw e;
        }
        stream.admit();
        return stream;
    }

    /** The pod of one execution, pinned by its UID. */
    record PinnedPod(SandboxRef ref, long generation, String namespace, String name, String uid) {}

    /**
     * The pod of execution {@code generation} of {@code ref}: NOT_FOUND without the sandbox, FAILED_PRECONDITION on an
     * identity mismatch, with a {@code generation} mismatch when the Sandbox carries another generation, and with a
     * {@code running} mismatch for an exec when the execution does not run, or when its pod is gone (Kubernetes
     * removes a stopped execution's pod, and its output with it). The order of the first three checks is the
     * toolkit's ({@link ExecutionFacts}).
     */
    PinnedPod pin(SandboxRef ref, long generation, Access access) {
        SandboxApi.Located sandbox = api.findById(ref.id()).orElseThrow(() -> DriverException.notFound(ref));
        SandboxRef stamped = sandbox.stamps().ref();
        SandboxState state = SandboxObjects.read(sandbox.object(), version).state();
        new ExecutionFacts(
                        stamped.workspace(),
                        stamped.name(),
                        sandbox.stamps().generation(),
                        state == SandboxState.RUNNING)
                .require(ref, generation, access);
        if (SandboxObjects.beingDeleted(sandbox.object())) {
            throw notRunning(ref, generation, "its Sandbox is being deleted");
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
        if (access == Access.EXEC
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
