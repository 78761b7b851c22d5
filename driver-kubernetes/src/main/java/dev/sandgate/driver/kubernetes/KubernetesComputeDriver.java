package dev.sandgate.driver.kubernetes;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.kubernetes.KubernetesSettings.NamespaceMode;
import dev.sandgate.driver.kubernetes.KubernetesSettings.NetworkNoneMode;
import dev.sandgate.driver.kubernetes.SandboxObjects.Stamps;
import dev.sandgate.driver.toolkit.Backoff;
import dev.sandgate.driver.toolkit.Identity;
import dev.sandgate.driver.toolkit.StartDecision;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
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
import io.fabric8.kubernetes.api.model.DeleteOptions;
import io.fabric8.kubernetes.api.model.DeletionPropagation;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceList;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Preconditions;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.dsl.FilterWatchListDeletable;
import io.fabric8.kubernetes.client.dsl.MixedOperation;
import io.fabric8.kubernetes.client.dsl.Resource;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;
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
final class KubernetesComputeDriver implements ComputeDriver {
    private static final Logger log = LoggerFactory.getLogger(KubernetesComputeDriver.class);
    private static final int LOCK_STRIPES = 64;
    private static final int MAX_ATTEMPTS = 20;
    private static final String BACKEND_ID = "backend_id";

    private final KubernetesClient client;
    private final KubernetesSettings settings;
    private final DriverContext context;
    private final SandboxApiVersion version;
    private final SandboxManifests manifests;
    private final String sharedNamespace;
    private final DriverCapabilities capabilities;
    private final ReentrantLock[] locks = new ReentrantLock[LOCK_STRIPES];
    private final Set<SandboxWatchLoop> watches = new CopyOnWriteArraySet<>();
    private final AtomicBoolean closed = new AtomicBoolean();

    KubernetesComputeDriver(
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
        this.capabilities = new DriverCapabilities(enforceableFields(settings), true, true);
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
            String namespace = namespaceOf(ref);
            String name = ResourceNames.sandboxName(sharedNamespace != null, ref);
            for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
                Optional<Located> existing = findById(ref.id());
                if (existing.isPresent()) {
                    return existingForCreate(ref, spec, launch, existing.get());
                }
                prepareNamespace(namespace, ref.workspace(), launch);
                GenericKubernetesResource manifest = manifests.newSandbox(namespace, name, ref, spec, launch);
                GenericKubernetesResource created;
                try {
                    created = sandboxes()
                            .inNamespace(namespace)
                            .resource(manifest)
                            .create();
                } catch (KubernetesClientException e) {
                    if (e.getCode() != KubernetesErrors.CONFLICT) {
                        throw KubernetesErrors.translate("create Sandbox " + namespace + "/" + name, e);
                    }
                    GenericKubernetesResource occupant = KubernetesErrors.call(
                            "read Sandbox " + namespace + "/" + name,
                            () -> sandboxes()
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
                return new CreateResult(observe(located(created)), true);
            }
            throw new DriverException(
                    DriverErrorCode.ABORTED, "Sandbox " + namespace + "/" + name + " kept changing during create");
        });
    }

    private CreateResult existingForCreate(SandboxRef ref, SandboxSpec spec, LaunchInput launch, Located existing) {
        verifyIdentity(ref, existing);
        if (existing.stamps().generation() != launch.generation()
                || !existing.stamps().policyDigest().equals(launch.policy().digest())) {
            throw DriverException.alreadyExists(
                    ref,
                    launch,
                    existing.stamps().generation(),
                    existing.stamps().policyDigest());
        }
        ensureEnvironment(existing.namespace(), ref, spec, existing.object());
        return new CreateResult(observe(existing), false);
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

    private void prepareNamespace(String namespace, String workspace, LaunchInput launch) {
        if (settings.namespaceMode() == NamespaceMode.PER_WORKSPACE) {
            ensureNamespace(namespace, workspace);
        }
        if (SandboxManifests.networkNone(launch) && settings.networkNone() == NetworkNoneMode.NETWORK_POLICY) {
            ensureDenyAllPolicy(namespace);
        }
    }

    /**
     * Creates a workspace's namespace on its first sandbox, labelled as the driver's and with the baseline Pod
     * Security level enforced (sandbox pods run untrusted code). The driver never deletes namespaces.
     */
    private void ensureNamespace(String namespace, String workspace) {
        if (KubernetesErrors.call(
                        "read namespace " + namespace,
                        () -> client.namespaces().withName(namespace).get())
                != null) {
            return;
        }
        try {
            client.namespaces()
                    .resource(new NamespaceBuilder()
                            .withNewMetadata()
                            .withName(namespace)
                            .addToLabels(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE)
                            .addToLabels(Labels.WORKSPACE, workspace)
                            .addToLabels("pod-security.kubernetes.io/enforce", "baseline")
                            .endMetadata()
                            .build())
                    .create();
            log.info("Created namespace {} for a workspace", namespace);
        } catch (KubernetesClientException e) {
            if (e.getCode() != KubernetesErrors.CONFLICT) {
                throw KubernetesErrors.translate("create namespace " + namespace, e);
            }
        }
    }

    /**
     * Makes sure the namespace has the NetworkPolicy that denies all traffic of pods labelled for network mode none,
     * creating it when absent and refusing to launch when an existing one no longer denies everything.
     */
    private void ensureDenyAllPolicy(String namespace) {
        NetworkPolicy existing = KubernetesErrors.call(
                "read NetworkPolicy " + namespace + "/" + SandboxManifests.NETWORK_POLICY_NAME,
                () -> client.network()
                        .networkPolicies()
                        .inNamespace(namespace)
                        .withName(SandboxManifests.NETWORK_POLICY_NAME)
                        .get());
        if (existing == null) {
            try {
                client.network()
                        .networkPolicies()
                        .inNamespace(namespace)
                        .resource(SandboxManifests.denyAllNetworkPolicy(namespace))
                        .create();
                log.info("Created NetworkPolicy {}/{}", namespace, SandboxManifests.NETWORK_POLICY_NAME);
            } catch (KubernetesClientException e) {
                if (e.getCode() != KubernetesErrors.CONFLICT) {
                    throw KubernetesErrors.translate("create NetworkPolicy in " + namespace, e);
                }
            }
            return;
        }
        if (!SandboxManifests.deniesAll(existing)) {
            throw new DriverException(
                    DriverErrorCode.FAILED_PRECONDITION,
                    "NetworkPolicy " + namespace + "/" + SandboxManifests.NETWORK_POLICY_NAME
                            + " no longer denies all traffic of pods labelled " + SandboxManifests.NETWORK_LABEL
                            + "=none; refusing to launch with network mode none");
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // get and list

    @Override
    public SandboxObservation get(SandboxRef ref) {
        requireNonNull(ref, "ref is null");
        return observe(resolve(ref));
    }

    @Override
    public List<SandboxObservation> list() {
        List<SandboxObservation> observations = new ArrayList<>();
        for (GenericKubernetesResource item : listOwn().getItems()) {
            observation(item).ifPresent(observations::add);
        }
        return observations;
    }

    private GenericKubernetesResourceList listOwn() {
        return KubernetesErrors.call(
                "list sandboxes", () -> scoped().withLabels(ownSelector()).list());
    }

    private Map<String, String> ownSelector() {
        return Map.of(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE, Labels.GATEWAY_ID, context.gatewayId());
    }

    private Optional<SandboxObservation> observation(GenericKubernetesResource item) {
        Optional<Stamps> stamps = SandboxObjects.stamps(item);
        if (stamps.isEmpty()) {
            log.warn(
                    "Ignoring Sandbox {}/{}: it carries this gateway's id but not a complete set of sandgate stamps",
                    item.getMetadata().getNamespace(),
                    item.getMetadata().getName());
            return Optional.empty();
        }
        return Optional.of(SandboxObjects.observe(item, stamps.get(), version));
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
                Located sandbox = resolve(ref);
                refuseIfDeleting(ref, sandbox);
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
                    return new StartResult(observe(sandbox), false);
                }
                if (SandboxManifests.networkNone(launch) && settings.networkNone() == NetworkNoneMode.NETWORK_POLICY) {
                    ensureDenyAllPolicy(sandbox.namespace());
                }
                if (ended) {
                    // The execution ended while the spec still asks for a running pod: the controller keeps the
                    // finished pod, so suspend first; the next round launches.
                    beforeMutation(ref, MutationHook.Operation.STOP, sandbox.uid());
                    Optional<Located> suspended = patch(ref, sandbox, manifests.runModePatch(sandbox.object(), false));
                    if (suspended.isPresent()) {
                        awaitStopped(ref, suspended.get());
                    }
                    continue;
                }
                Map<String, Object> patch = decision == StartDecision.RELAUNCH
                        ? manifests.runModePatch(sandbox.object(), true)
                        : manifests.launchPatch(sandbox.object(), ref, launch);
                beforeMutation(ref, MutationHook.Operation.START, sandbox.uid());
                Optional<Located> launched = patch(ref, sandbox, patch);
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
                return new StartResult(observe(launched.get()), true);
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
                Located sandbox = resolve(ref);
                requireGeneration(ref, sandbox, expectedGeneration);
                refuseIfDeleting(ref, sandbox);
                if (!version.desiredRunning(sandbox.object())) {
                    return new StopResult(observe(awaitStopped(ref, sandbox)), false);
                }
                SandboxState before =
                        SandboxObjects.read(sandbox.object(), version).state();
                boolean wasActive = before != SandboxState.STOPPED && before != SandboxState.FAILED;
                beforeMutation(ref, MutationHook.Operation.STOP, sandbox.uid());
                Optional<Located> patched = patch(ref, sandbox, manifests.runModePatch(sandbox.object(), false));
                if (patched.isEmpty()) {
                    continue;
                }
                Located stopped = awaitStopped(ref, patched.get());
                log.info(
                        "Stopped sandbox {} at generation {} (Sandbox {}/{}, uid {})",
                        ref,
                        stopped.stamps().generation(),
                        sandbox.namespace(),
                        sandbox.name(),
                        sandbox.uid());
                return new StopResult(observe(stopped), wasActive);
            }
            throw keptChanging(ref);
        });
    }

    private Located awaitStopped(SandboxRef ref, Located sandbox) {
        return await(ref, sandbox, "stopped", current -> {
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
                Optional<Located> found = findById(ref.id());
                if (found.isEmpty()) {
                    return new DeleteResult(false);
                }
                Located sandbox = found.get();
                verifyIdentity(ref, sandbox);
                requireGeneration(ref, sandbox, expectedGeneration);
                if (SandboxObjects.beingDeleted(sandbox.object())) {
                    // someone else's delete is under way: this call deletes nothing, but answers once it is done
                    awaitGone(ref, sandbox);
                    return new DeleteResult(false);
                }
                beforeMutation(ref, MutationHook.Operation.DELETE, sandbox.uid());
                int code = deleteWithPreconditions(sandbox);
                if (code == 200 || code == 202) {
                    awaitGone(ref, sandbox);
                    log.info(
                            "Deleted sandbox {} (Sandbox {}/{}, uid {})",
                            ref,
                            sandbox.namespace(),
                            sandbox.name(),
                            sandbox.uid());
                    return new DeleteResult(true);
                }
                // 409 or 404: find out what is there now
                Optional<Located> now = findById(ref.id());
                if (now.isEmpty()) {
                    return new DeleteResult(false);
                }
                requireSameObject(ref, sandbox, now.get());
                log.debug("Sandbox {} changed before it could be deleted (HTTP {}); deciding again", ref, code);
            }
            throw keptChanging(ref);
        });
    }

    /**
     * DELETE with preconditions on the UID and resourceVersion that were read, and foreground propagation so that
     * the Sandbox disappears only after its pod, volume claim and Secret. fabric8's delete DSL sets only the
     * resourceVersion precondition, so the request is sent raw. Returns the HTTP status: 200 or 202 deleted, 409 a
     * precondition failed, 404 already gone.
     */
    private int deleteWithPreconditions(Located sandbox) {
        DeleteOptions options = new DeleteOptions();
        options.setApiVersion("v1");
        options.setKind("DeleteOptions");
        options.setPreconditions(
                new Preconditions(sandbox.object().getMetadata().getResourceVersion(), sandbox.uid()));
        options.setPropagationPolicy(DeletionPropagation.FOREGROUND.toString());
        String path = "/apis/" + version.apiVersion() + "/namespaces/" + sandbox.namespace() + "/"
                + SandboxApiVersion.PLURAL + "/" + sandbox.name();
        try {
            String body = client.raw(path, "DELETE", options);
            return body == null ? KubernetesErrors.NOT_FOUND : 200;
        } catch (KubernetesClientException e) {
            if (e.getCode() == KubernetesErrors.CONFLICT || e.getCode() == KubernetesErrors.NOT_FOUND) {
                return e.getCode();
            }
            throw KubernetesErrors.translate("delete Sandbox " + sandbox.namespace() + "/" + sandbox.name(), e);
        }
    }

    private void awaitGone(SandboxRef ref, Located sandbox) {
        Duration timeout = settings.operationTimeout();
        long deadline = System.nanoTime() + timeout.toNanos();
        var backoff = backoff();
        while (true) {
            GenericKubernetesResource current = readByName(sandbox);
            if (current == null || !sandbox.uid().equals(SandboxObjects.uid(current))) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new DriverException(
                        DriverErrorCode.DEADLINE_EXCEEDED,
                        "sandbox " + ref.id() + " was not gone within " + timeout
                                + " (is the Agent Sandbox controller running and the garbage collector healthy?)");
            }
            backoff.pause("the controller");
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // watch and close

    @Override
    public WatchSubscription watch(SandboxWatcher watcher) {
        requireNonNull(watcher, "watcher is null");
        requireOpen();
        SandboxWatchLoop loop = new SandboxWatchLoop(
                new SandboxWatchLoop.Source() {
                    @Override
                    public SandboxWatchLoop.Listing list() {
                        GenericKubernetesResourceList list =
                                scoped().withLabels(ownSelector()).list();
                        // no resourceVersion (never from an API server): watch from "any", i.e. now
                        String resourceVersion = list.getMetadata() == null
                                ? null
                                : list.getMetadata().getResourceVersion();
                        return new SandboxWatchLoop.Listing(
                                list.getItems(), Objects.requireNonNullElse(resourceVersion, ""));
                    }

                    @Override
                    public Watch watch(String resourceVersion, Watcher<GenericKubernetesResource> forwarder) {
                        return scoped().withLabels(ownSelector())
                                .watch(
                                        new ListOptionsBuilder()
                                                .withResourceVersion(resourceVersion)
                                                .withAllowWatchBookmarks(true)
                                                .build(),
                                        forwarder);
                    }
                },
                this::observation,
                watcher,
                settings.operationTimeout());
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

    // ---------------------------------------------------------------------------------------------------------------
    // lookups

    /** A Sandbox object of this gateway together with its stamps. */
    record Located(GenericKubernetesResource object, Stamps stamps) {
        String namespace() {
            return object.getMetadata().getNamespace();
        }

        String name() {
            return object.getMetadata().getName();
        }

        String uid() {
            return SandboxObjects.uid(object);
        }
    }

    private MixedOperation<
                    GenericKubernetesResource, GenericKubernetesResourceList, Resource<GenericKubernetesResource>>
            sandboxes() {
        return client.genericKubernetesResources(version.context());
    }

    /** Sandboxes where this driver keeps them: its shared namespace, or every namespace. */
    private FilterWatchListDeletable<
                    GenericKubernetesResource, GenericKubernetesResourceList, Resource<GenericKubernetesResource>>
            scoped() {
        return sharedNamespace != null
                ? sandboxes().inNamespace(sharedNamespace)
                : sandboxes().inAnyNamespace();
    }

    private String namespaceOf(SandboxRef ref) {
        return sharedNamespace != null
                ? sharedNamespace
                : ResourceNames.workspaceNamespace(settings.namespacePrefix(), ref.workspace());
    }

    /** The sandbox carrying {@code id} under this gateway, found by label selector only. */
    private Optional<Located> findById(String id) {
        Map<String, String> selector = Map.of(Labels.GATEWAY_ID, context.gatewayId(), Labels.SANDBOX_ID, id);
        List<GenericKubernetesResource> items = KubernetesErrors.call(
                        "find sandbox " + id,
                        () -> scoped().withLabels(selector).list())
                .getItems();
        if (items.isEmpty()) {
            return Optional.empty();
        }
        if (items.size() > 1) {
            throw new DriverException(
                    DriverErrorCode.FAILED_PRECONDITION,
                    items.size() + " Sandbox objects carry sandbox id " + id + "; refusing to choose one");
        }
        GenericKubernetesResource item = items.get(0);
        Stamps stamps = SandboxObjects.stamps(item)
                .orElseThrow(() -> new DriverException(
                        DriverErrorCode.FAILED_PRECONDITION,
                        "Sandbox " + item.getMetadata().getNamespace() + "/"
                                + item.getMetadata().getName() + " carries sandbox id " + id
                                + " but not a complete set of sandgate stamps"));
        return Optional.of(new Located(item, stamps));
    }

    /** Finds the sandbox by id and verifies its workspace and name; NOT_FOUND or FAILED_PRECONDITION otherwise. */
    private Located resolve(SandboxRef ref) {
        Located located = findById(ref.id()).orElseThrow(() -> DriverException.notFound(ref));
        verifyIdentity(ref, located);
        return located;
    }

    private static void verifyIdentity(SandboxRef ref, Located located) {
        SandboxRef actual = located.stamps().ref();
        Identity.requireLocator(ref, actual.workspace(), actual.name());
    }

    private static void requireGeneration(SandboxRef ref, Located sandbox, OptionalLong expected) {
        Identity.requireExpectedGeneration(ref, expected, sandbox.stamps().generation());
    }

    private static void refuseIfDeleting(SandboxRef ref, Located sandbox) {
        if (SandboxObjects.beingDeleted(sandbox.object())) {
            throw new DriverException(DriverErrorCode.FAILED_PRECONDITION, "sandbox " + ref.id() + " is being deleted");
        }
    }

    /** After a 409 or 404: the object now carrying the id must be the one that was read, else nothing is touched. */
    private static void requireSameObject(SandboxRef ref, Located before, Located now) {
        if (!before.uid().equals(now.uid())) {
            throw new DriverException(
                    DriverErrorCode.FAILED_PRECONDITION,
                    "sandbox " + ref.id() + " was replaced between lookup and mutation (uid " + before.uid()
                            + " became " + now.uid() + "); nothing was changed",
                    List.of(new Mismatch(BACKEND_ID, before.uid(), now.uid())),
                    null);
        }
        verifyIdentity(ref, now);
    }

    private Located located(GenericKubernetesResource object) {
        Stamps stamps = SandboxObjects.stamps(object)
                .orElseThrow(() -> new DriverException(
                        DriverErrorCode.INTERNAL,
                        "Sandbox " + object.getMetadata().getName() + " lost its sandgate stamps"));
        return new Located(object, stamps);
    }

    private SandboxObservation observe(Located located) {
        return SandboxObjects.observe(located.object(), located.stamps(), version);
    }

    private GenericKubernetesResource readByName(Located sandbox) {
        return KubernetesErrors.call(
                "read Sandbox " + sandbox.namespace() + "/" + sandbox.name(),
                () -> sandboxes()
                        .inNamespace(sandbox.namespace())
                        .withName(sandbox.name())
                        .get());
    }

    // ---------------------------------------------------------------------------------------------------------------
    // mutation helpers

    /**
     * Applies a JSON merge patch that carries the resourceVersion read. Returns the patched object, or empty when the
     * API server answered 409 or 404 and the object now carrying the id is the same one (changed meanwhile): the
     * caller decides again. Throws NOT_FOUND when the sandbox is gone and FAILED_PRECONDITION when it was replaced.
     */
    private Optional<Located> patch(SandboxRef ref, Located sandbox, Map<String, Object> patch) {
        String json = client.getKubernetesSerialization().asJson(patch);
        try {
            GenericKubernetesResource patched = sandboxes()
                    .inNamespace(sandbox.namespace())
                    .withName(sandbox.name())
                    .patch(PatchContext.of(PatchType.JSON_MERGE), json);
            return Optional.of(located(patched));
        } catch (KubernetesClientException e) {
            if (e.getCode() != KubernetesErrors.CONFLICT && e.getCode() != KubernetesErrors.NOT_FOUND) {
                throw KubernetesErrors.translate("patch Sandbox " + sandbox.namespace() + "/" + sandbox.name(), e);
            }
            Located now = findById(ref.id()).orElseThrow(() -> DriverException.notFound(ref));
            requireSameObject(ref, sandbox, now);
            log.debug("Sandbox {} changed before it could be patched (HTTP {}); deciding again", ref, e.getCode());
            return Optional.empty();
        }
    }

    /** Polls the sandbox until {@code done} holds; NOT_FOUND if it disappears, FAILED_PRECONDITION if replaced. */
    private Located await(SandboxRef ref, Located sandbox, String what, Predicate<Located> done) {
        Duration timeout = settings.operationTimeout();
        long deadline = System.nanoTime() + timeout.toNanos();
        var backoff = backoff();
        Located current = sandbox;
        while (!done.test(current)) {
            if (System.nanoTime() > deadline) {
                throw new DriverException(
                        DriverErrorCode.DEADLINE_EXCEEDED,
                        "sandbox " + ref.id() + " was not " + what + " within " + timeout + " ("
                                + SandboxObjects.read(current.object(), version).detail()
                                + "; is the Agent Sandbox controller running?)");
            }
            backoff.pause("the controller");
            GenericKubernetesResource object = readByName(sandbox);
            if (object == null) {
                throw DriverException.notFound(ref);
            }
            Located now = located(object);
            requireSameObject(ref, sandbox, now);
            current = now;
        }
        return current;
    }

    /** Pauses between looks at a sandbox the controller is working on: 10 ms, doubling up to 500 ms. */
    private static Backoff backoff() {
        return new Backoff(Duration.ofMillis(10), Duration.ofMillis(500));
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
