package dev.sandgate.driver.kubernetes;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.kubernetes.KubernetesSettings.NamespaceMode;
import dev.sandgate.driver.kubernetes.KubernetesSettings.NetworkNoneMode;
import dev.sandgate.driver.toolkit.StartDecision;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.LogStream;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.PolicyField;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.StartResult;
import dev.sandgate.spi.StaticPolicy;
import dev.sandgate.spi.StopResult;
import dev.sandgate.spi.WatchSubscription;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sandboxes as Agent Sandbox custom resources ({@code agents.x-k8s.io}, kind {@code Sandbox}). The Agent Sandbox
 * controller turns each into a pod and a workspace volume claim; this driver writes the Sandbox object and reads the
 * controller's conditions back.
 *
 * <h2>Identity and preconditions</h2>
 *
 * A sandbox is found by the label selector {@code sandgate.dev/gateway-id=<gateway>,sandgate.dev/sandbox-id=<id>},
 * never by name; its workspace label and name annotation are then verified. Every mutation is conditional: patches
 * carry the {@code resourceVersion} that was read, deletes carry DeleteOptions preconditions on the UID and
 * resourceVersion. When the API server answers 409, the driver reads the sandbox again by id and answers truthfully:
 * gone ({@link DriverErrorCode#NOT_FOUND}, or nothing deleted), replaced by another object with the same id
 * ({@link DriverErrorCode#FAILED_PRECONDITION}, nothing touched), or the same object changed meanwhile (typically
 * the controller's status update): decide again on the fresh object.
 *
 * <h2>Executions</h2>
 *
 * One Sandbox object carries every execution of a sandbox. Stop sets the run mode to stopped (v1beta1 {@code
 * operatingMode: Suspended}, v1alpha1 {@code replicas: 0}) and waits for the controller's {@code Suspended}
 * condition; the workspace volume claim stays. Start of a new generation patches the generation label, the policy
 * digest annotation and the container's security settings, and sets the run mode to running. Conditions whose
 * {@code observedGeneration} predates the object's last change are ignored, so an execution's state is never read
 * from its predecessor's conditions.
 */
final class KubernetesDriver implements ComputeDriver {
    private static final Logger log = LoggerFactory.getLogger(KubernetesDriver.class);
    private static final int LOCK_STRIPES = 64;
    private static final int MAX_ATTEMPTS = 20;

    private final KubernetesClient client;
    private final KubernetesSettings settings;
    private final DriverContext context;
    private final SandboxApiVersion version;
    private final SandboxManifests manifests;
    private final String sharedNamespace;
    private final DriverCapabilities capabilities;
    private final SandboxApi api;
    private final WorkspaceNamespaces namespaces;
    private final ExecutionPods pods;
    private final ReentrantLock[] locks = new ReentrantLock[LOCK_STRIPES];
    private final Set<SandboxWatchLoop> watches = new CopyOnWriteArraySet<>();
    private final AtomicBoolean closed = new AtomicBoolean();

    KubernetesDriver(
            KubernetesClient client, KubernetesSettings settings, DriverContext context, SandboxApiVersion version) {
        this.client = requireNonNull(client, "client is null");
        this.settings = requireNonNull(settings, "settings is null");
        this.context = requireNonNull(context, "context is null");
        this.version = requireNonNull(version, "version is null");
        this.manifests =
                new SandboxManifests(settings, context.gatewayId(), version, client.getKubernetesSerialization());
        this.sharedNamespace = settings.namespaceMode() == NamespaceMode.SHARED
                ? settings.namespace()
                        .orElseGet(
                                () -> Optional.ofNullable(client.getNamespace()).orElse("default"))
                : null;
        this.capabilities = new DriverCapabilities(enforceableFields(settings), true, true).withExecAndLogs(true, true);
        this.api = new SandboxApi(client, settings, version, context.gatewayId(), sharedNamespace);
        this.pods = new ExecutionPods(client, api, version, settings.requestTimeout());
        this.namespaces = new WorkspaceNamespaces(client, settings);
        for (int i = 0; i < locks.length; i++) {
            locks[i] = new ReentrantLock();
        }
    }

    private static Set<PolicyField> enforceableFields(KubernetesSettings settings) {
        Set<PolicyField> fields = EnumSet.of(
                PolicyField.READ_ONLY_ROOT_FILESYSTEM,
                PolicyField.DROP_CAPABILITIES,
                PolicyField.NO_NEW_PRIVILEGES,
                PolicyField.MEMORY_LIMIT,
                PolicyField.CPU_LIMIT);
        switch (settings.networkNone()) {
            case NETWORK_POLICY -> fields.add(PolicyField.NETWORK_NONE);
            case UNSUPPORTED -> {
                // Kubernetes has no pod without a network interface; refused unless NetworkPolicy is asserted.
            }
        }
        // PIDS_LIMIT: the pids limit is a kubelet setting (podPidsLimit), not a pod field.
        // NETWORK_ALLOW_LIST: not enforced by any driver yet.
        return fields;
    }

    /** The Sandbox API version this driver instance speaks. */
    SandboxApiVersion apiVersion() {
        return version;
    }

    @Override
    public DriverCapabilities capabilities() {
        return capabilities;
    }

    @Override
    public void validate(SandboxSpec spec, LaunchInput launch) {
        requireNonNull(spec, "spec is null");
        requireNonNull(launch, "launch is null");
        validateLaunch(launch);
        StaticPolicy policy = launch.policy().staticPolicy();
        if (policy.memoryLimitBytes() > 0 && spec.resources().memoryBytes() > policy.memoryLimitBytes()) {
            throw DriverException.invalidArgument(
                    "resources.memory_bytes", "must not exceed the policy's memory limit");
        }
        if (policy.cpuLimitMillis() > 0 && spec.resources().milliCpus() > policy.cpuLimitMillis()) {
            throw DriverException.invalidArgument("resources.milli_cpus", "must not exceed the policy's CPU limit");
        }
    }

    private void validateLaunch(LaunchInput launch) {
        capabilities.requireEnforceable(launch.policy());
    }

    // ---------------------------------------------------------------------------------------------------------------
    // create

    @Override
    public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
        requireNonNull(ref, "ref is null");
        validate(spec, launch);
        return locked(ref, () -> {
            String namespace = api.namespaceOf(ref);
            String name = ResourceNames.sandboxName(sharedNamespace != null, ref);
            for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
                Optional<SandboxApi.Located> existing = api.findById(ref.id());
                if (existing.isPresent()) {
                    return existingForCreate(ref, spec, launch, existing.get());
                }
                namespaces.prepare(namespace, ref.workspace(), launch);
                GenericKubernetesResource manifest = manifests.newSandbox(namespace, name, ref, spec, launch);
                GenericKubernetesResource created;
                try {
                    created = api.sandboxes()
                            .inNamespace(namespace)
                            .resource(manifest)
                            .create();
                } catch (KubernetesClientException e) {
                    if (e.getCode() != KubernetesErrors.CONFLICT) {
                        throw KubernetesErrors.translate("create Sandbox " + namespace + "/" + name, e);
                    }
                    GenericKubernetesResource occupant = KubernetesErrors.call(
                            "read Sandbox " + namespace + "/" + name,
                            () -> api.sandboxes()
                                    .inNamespace(namespace)
                                    .withName(name)
                                    .get());
                    if (occupant == null) {
                        continue; // deleted since: try again
                    }
                    if (!carriesOurId(occupant, ref.id())) {
                        throw nameTaken(ref, namespace, name, occupant);
                    }
                    continue; // a concurrent create of this very sandbox won: answer from it
                }
                ensureEnvironment(namespace, ref, spec, created);
                log.info(
                        "Created sandbox {} as Sandbox {}/{} ({}, uid {}, generation {})",
                        ref,
                        namespace,
                        name,
                        version.apiVersion(),
                        SandboxObjects.uid(created),
                        launch.generation());
                return new CreateResult(api.observe(api.located(created)), true);
            }
            throw new DriverException(
                    DriverErrorCode.ABORTED, "Sandbox " + namespace + "/" + name + " kept changing during create");
        });
    }

    private CreateResult existingForCreate(
            SandboxRef ref, SandboxSpec spec, LaunchInput launch, SandboxApi.Located existing) {
        SandboxApi.verifyIdentity(ref, existing);
        if (existing.stamps().generation() != launch.generation()
                || !existing.stamps().policyDigest().equals(launch.policy().digest())) {
            throw DriverException.alreadyExists(
                    ref,
                    launch,
                    existing.stamps().generation(),
                    existing.stamps().policyDigest());
        }
        ensureEnvironment(existing.namespace(), ref, spec, existing.object());
        return new CreateResult(api.observe(existing), false);
    }

    private static DriverException nameTaken(
            SandboxRef ref, String namespace, String name, GenericKubernetesResource occupant) {
        Map<String, String> labels =
                Optional.ofNullable(occupant.getMetadata().getLabels()).orElse(Map.of());
        String actualId = labels.getOrDefault(Labels.SANDBOX_ID, "");
        return new DriverException(
                DriverErrorCode.FAILED_PRECONDITION,
                "Sandbox " + namespace + "/" + name + " exists and belongs to another sandbox"
                        + (actualId.isEmpty() ? "" : " (" + actualId + ")") + ", not " + ref.id(),
                List.of(new Mismatch(Mismatch.SANDBOX_ID, ref.id(), actualId)),
                null);
    }

    private boolean carriesOurId(GenericKubernetesResource object, String id) {
        Map<String, String> labels = object.getMetadata().getLabels();
        return labels != null
                && id.equals(labels.get(Labels.SANDBOX_ID))
                && context.gatewayId().equals(labels.get(Labels.GATEWAY_ID));
    }

    /** Creates the Secret with the sandbox's environment, owned by its Sandbox; an existing one is kept. */
    private void ensureEnvironment(
            String namespace, SandboxRef ref, SandboxSpec spec, GenericKubernetesResource owner) {
        if (spec.environment().isEmpty()) {
            return;
        }
        try {
            client.secrets()
                    .inNamespace(namespace)
                    .resource(manifests.environmentSecret(namespace, ref, spec, owner))
                    .create();
        } catch (KubernetesClientException e) {
            if (e.getCode() != KubernetesErrors.CONFLICT) {
                throw KubernetesErrors.translate("create the environment Secret of sandbox " + ref.id(), e);
            }
            // created by an earlier attempt of this create; its name carries the sandbox id
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // get and list

    @Override
    public SandboxObservation get(SandboxRef ref) {
        requireNonNull(ref, "ref is null");
        return api.observe(api.resolve(ref));
    }

    @Override
    public List<SandboxObservation> list() {
        List<SandboxObservation> observations = new ArrayList<>();
        for (GenericKubernetesResource item : api.listOwn().getItems()) {
            api.observation(item).ifPresent(observations::add);
        }
        return observations;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // start

    @Override
    public StartResult start(SandboxRef ref, LaunchInput launch) {
        requireNonNull(ref, "ref is null");
        requireNonNull(launch, "launch is null");
        validateLaunch(launch);
        return locked(ref, () -> {
            for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
                SandboxApi.Located sandbox = api.resolve(ref);
                SandboxApi.refuseIfDeleting(ref, sandbox);
                long current = sandbox.stamps().generation();
                boolean desiredRunning = version.desiredRunning(sandbox.object());
                SandboxState state =
                        SandboxObjects.read(sandbox.object(), version).state();
                boolean ended = desiredRunning && (state == SandboxState.FAILED || state == SandboxState.STOPPED);
                boolean active = desiredRunning && !ended;
                StartDecision decision = StartDecision.decide(
                        ref,
                        launch,
                        current,
                        sandbox.stamps().policyDigest(),
                        active,
                        capabilities.launchPolicyOnStart());
                if (decision == StartDecision.REPLAY) {
                    return new StartResult(api.observe(sandbox), false);
                }
                if (SandboxManifests.networkNone(launch) && settings.networkNone() == NetworkNoneMode.NETWORK_POLICY) {
                    namespaces.ensureDenyAllPolicy(sandbox.namespace());
                }
                if (ended) {
                    // The execution ended while the spec still asks for a running pod: the controller keeps the
                    // finished pod, so suspend first; the next round launches.
                    beforeMutation(ref, MutationHook.Operation.STOP, sandbox.uid());
                    Optional<SandboxApi.Located> suspended =
                            api.patch(ref, sandbox, manifests.runModePatch(sandbox.object(), false));
                    if (suspended.isPresent()) {
                        awaitStopped(ref, suspended.get());
                    }
                    continue;
                }
                Map<String, Object> patch = decision == StartDecision.RELAUNCH
                        ? manifests.runModePatch(sandbox.object(), true)
                        : manifests.launchPatch(sandbox.object(), ref, launch);
                beforeMutation(ref, MutationHook.Operation.START, sandbox.uid());
                Optional<SandboxApi.Located> launched = api.patch(ref, sandbox, patch);
                if (launched.isEmpty()) {
                    continue;
                }
                log.info(
                        "Started sandbox {} at generation {} (Sandbox {}/{}, uid {})",
                        ref,
                        launch.generation(),
                        sandbox.namespace(),
                        sandbox.name(),
                        sandbox.uid());
                return new StartResult(api.observe(launched.get()), true);
            }
            throw keptChanging(ref);
        });
    }

    // ---------------------------------------------------------------------------------------------------------------
    // stop

    @Override
    public StopResult stop(SandboxRef ref, OptionalLong expectedGeneration) {
        requireNonNull(ref, "ref is null");
        requireNonNull(expectedGeneration, "expectedGeneration is null");
        return locked(ref, () -> {
            for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
                SandboxApi.Located sandbox = api.resolve(ref);
                SandboxApi.requireGeneration(ref, sandbox, expectedGeneration);
                SandboxApi.refuseIfDeleting(ref, sandbox);
                if (!version.desiredRunning(sandbox.object())) {
                    return new StopResult(api.observe(awaitStopped(ref, sandbox)), false);
                }
                SandboxState before =
                        SandboxObjects.read(sandbox.object(), version).state();
                boolean wasActive = before != SandboxState.STOPPED && before != SandboxState.FAILED;
                beforeMutation(ref, MutationHook.Operation.STOP, sandbox.uid());
                Optional<SandboxApi.Located> patched =
                        api.patch(ref, sandbox, manifests.runModePatch(sandbox.object(), false));
                if (patched.isEmpty()) {
                    continue;
                }
                SandboxApi.Located stopped = awaitStopped(ref, patched.get());
                log.info(
                        "Stopped sandbox {} at generation {} (Sandbox {}/{}, uid {})",
                        ref,
                        stopped.stamps().generation(),
                        sandbox.namespace(),
                        sandbox.name(),
                        sandbox.uid());
                return new StopResult(api.observe(stopped), wasActive);
            }
            throw keptChanging(ref);
        });
    }

    private SandboxApi.Located awaitStopped(SandboxRef ref, SandboxApi.Located sandbox) {
        return api.await(ref, sandbox, "stopped", current -> {
            if (version.desiredRunning(current.object())) {
                throw new DriverException(
                        DriverErrorCode.ABORTED,
                        "sandbox " + ref.id() + " was started by someone else while it was being stopped");
            }
            return SandboxObjects.read(current.object(), version).state() == SandboxState.STOPPED;
        });
    }

    // ---------------------------------------------------------------------------------------------------------------
    // delete

    @Override
    public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
        requireNonNull(ref, "ref is null");
        requireNonNull(expectedGeneration, "expectedGeneration is null");
        return locked(ref, () -> {
            for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
                Optional<SandboxApi.Located> found = api.findById(ref.id());
                if (found.isEmpty()) {
                    return new DeleteResult(false);
                }
                SandboxApi.Located sandbox = found.get();
                SandboxApi.verifyIdentity(ref, sandbox);
                SandboxApi.requireGeneration(ref, sandbox, expectedGeneration);
                if (SandboxObjects.beingDeleted(sandbox.object())) {
                    // someone else's delete is under way: this call deletes nothing, but answers once it is done
                    api.awaitGone(ref, sandbox);
                    return new DeleteResult(false);
                }
                beforeMutation(ref, MutationHook.Operation.DELETE, sandbox.uid());
                int code = api.deleteWithPreconditions(sandbox);
                if (code == 200 || code == 202) {
                    api.awaitGone(ref, sandbox);
                    log.info(
                            "Deleted sandbox {} (Sandbox {}/{}, uid {})",
                            ref,
                            sandbox.namespace(),
                            sandbox.name(),
                            sandbox.uid());
                    return new DeleteResult(true);
                }
                // 409 or 404: find out what is there now
                Optional<SandboxApi.Located> now = api.findById(ref.id());
                if (now.isEmpty()) {
                    return new DeleteResult(false);
                }
                SandboxApi.requireSameObject(ref, sandbox, now.get());
                log.debug("Sandbox {} changed before it could be deleted (HTTP {}); deciding again", ref, code);
            }
            throw keptChanging(ref);
        });
    }

    // ---------------------------------------------------------------------------------------------------------------
    // exec and logs

    /**
     * Runs the command in the pod of execution {@code generation}, pinned by UID ({@link ExecutionPods}). Under the
     * sandbox's lock, so that this driver's own stop or start cannot replace the pod meanwhile: the pod is pinned,
     * the stream opened, and the pod read again; the stream's output is let through only when the pod still has the
     * pinned UID, else the stream is closed and the exec refused (FAILED_PRECONDITION). The window that remains: a
     * pod replaced by someone else (deleted, re-created by the controller, scheduled and started) within the one
     * round trip between the first read and the API server's look-up of the name is detected, not prevented: the
     * command may have started in the replacement before the stream is closed.
     */
    @Override
    public ExecProcess exec(SandboxRef ref, long generation, ExecCommand command, ExecListener listener) {
        requireNonNull(ref, "ref is null");
        requireNonNull(command, "command is null");
        requireNonNull(listener, "listener is null");
        if (command.workingDirectory().isPresent()) {
            throw DriverException.invalidArgument(
                    "working_directory", "the Kubernetes exec API has no working directory; use sh -c 'cd DIR; ...'");
        }
        return locked(ref, () -> pods.exec(ref, generation, command, listener));
    }

    /**
     * Reads the output of the pod of execution {@code generation}, pinned by UID as for {@link #exec}. Kubernetes
     * deletes a stopped execution's pod and its output with it: a read of a stopped execution is FAILED_PRECONDITION
     * (with a {@code running} mismatch) once the pod is gone; a start of a newer generation makes it a {@code
     * generation} mismatch.
     */
    @Override
    public LogStream logs(SandboxRef ref, long generation, LogQuery query, LogListener listener) {
        requireNonNull(ref, "ref is null");
        requireNonNull(query, "query is null");
        requireNonNull(listener, "listener is null");
        return locked(ref, () -> pods.logs(ref, generation, query, listener));
    }

    // ---------------------------------------------------------------------------------------------------------------
    // watch and close

    @Override
    public WatchSubscription watch(SandboxWatcher watcher) {
        requireNonNull(watcher, "watcher is null");
        requireOpen();
        SandboxWatchLoop loop =
                new SandboxWatchLoop(api.watchSource(), api::observation, watcher, settings.operationTimeout());
        loop.start();
        watches.add(loop);
        return () -> {
            watches.remove(loop);
            loop.close();
        };
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            for (SandboxWatchLoop loop : watches) {
                loop.close();
            }
            watches.clear();
            client.close();
        }
    }

    private void requireOpen() {
        if (closed.get()) {
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "the Kubernetes driver is closed");
        }
    }

    private static DriverException keptChanging(SandboxRef ref) {
        return new DriverException(
                DriverErrorCode.ABORTED, "sandbox " + ref.id() + " kept changing underneath the operation; retry it");
    }

    private <T> T locked(SandboxRef ref, Supplier<T> operation) {
        requireOpen();
        ReentrantLock lock = lockOf(ref);
        lock.lock();
        try {
            return operation.get();
        } finally {
            lock.unlock();
        }
    }

    private ReentrantLock lockOf(SandboxRef ref) {
        return locks[Math.floorMod(ref.id().hashCode(), LOCK_STRIPES)];
    }

    /**
     * Calls the mutation hook without the sandbox's lock, which a hook may otherwise wait on (it may act on the same
     * sandbox); the lock is taken again before the mutation. Safe because every mutation is conditional on the
     * object's {@code resourceVersion} or UID: a change made meanwhile fails it (409) and the operation decides again.
     */
    private void beforeMutation(SandboxRef ref, MutationHook.Operation operation, String uid) {
        ReentrantLock lock = lockOf(ref);
        int holds = lock.getHoldCount();
        for (int i = 0; i < holds; i++) {
            lock.unlock();
        }
        try {
            context.mutationHook().beforeMutation(ref, operation, uid);
        } finally {
            for (int i = 0; i < holds; i++) {
                lock.lock();
            }
        }
    }
}
