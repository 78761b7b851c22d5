package dev.sandgate.driver.kubernetes;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.kubernetes.SandboxObjects.Stamps;
import dev.sandgate.driver.toolkit.Backoff;
import dev.sandgate.driver.toolkit.Identity;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import io.fabric8.kubernetes.api.model.DeleteOptions;
import io.fabric8.kubernetes.api.model.DeletionPropagation;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceList;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.Preconditions;
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
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's reads and conditional writes of Sandbox objects: look-up by the id label only (never by name), the
 * identity checks on what was found, JSON merge patches that carry the resourceVersion read, and waiting for the
 * controller. Holds no state but the client; the driver decides what to do with what it answers.
 */
final class SandboxApi {
    // Logs under the driver's name, which operators filter on.
    private static final Logger log = LoggerFactory.getLogger(KubernetesDriver.class);
    private static final String BACKEND_ID = "backend_id";

    private final KubernetesClient client;
    private final KubernetesSettings settings;
    private final SandboxApiVersion version;
    private final String gatewayId;
    private final String sharedNamespace;

    /** @param sharedNamespace the one namespace of every sandbox, or null when each workspace has its own */
    SandboxApi(
            KubernetesClient client,
            KubernetesSettings settings,
            SandboxApiVersion version,
            String gatewayId,
            String sharedNamespace) {
        this.client = requireNonNull(client, "client is null");
        this.settings = requireNonNull(settings, "settings is null");
        this.version = requireNonNull(version, "version is null");
        this.gatewayId = requireNonNull(gatewayId, "gatewayId is null");
        this.sharedNamespace = sharedNamespace;
    }

    GenericKubernetesResourceList listOwn() {
        return KubernetesErrors.call(
                "list sandboxes", () -> scoped().withLabels(ownSelector()).list());
    }

    Map<String, String> ownSelector() {
        return Map.of(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE, Labels.GATEWAY_ID, gatewayId);
    }

    Optional<SandboxObservation> observation(GenericKubernetesResource item) {
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

    MixedOperation<GenericKubernetesResource, GenericKubernetesResourceList, Resource<GenericKubernetesResource>>
            sandboxes() {
        return client.genericKubernetesResources(version.context());
    }

    /** Sandboxes where this driver keeps them: its shared namespace, or every namespace. */
    FilterWatchListDeletable<
                    GenericKubernetesResource, GenericKubernetesResourceList, Resource<GenericKubernetesResource>>
            scoped() {
        return sharedNamespace != null
                ? sandboxes().inNamespace(sharedNamespace)
                : sandboxes().inAnyNamespace();
    }

    String namespaceOf(SandboxRef ref) {
        return sharedNamespace != null
                ? sharedNamespace
                : ResourceNames.workspaceNamespace(settings.namespacePrefix(), ref.workspace());
    }

    /** The sandbox carrying {@code id} under this gateway, found by label selector only. */
    Optional<Located> findById(String id) {
        Map<String, String> selector = Map.of(Labels.GATEWAY_ID, gatewayId, Labels.SANDBOX_ID, id);
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
    Located resolve(SandboxRef ref) {
        Located located = findById(ref.id()).orElseThrow(() -> DriverException.notFound(ref));
        verifyIdentity(ref, located);
        return located;
    }

    static void verifyIdentity(SandboxRef ref, Located located) {
        SandboxRef actual = located.stamps().ref();
        Identity.requireLocator(ref, actual.workspace(), actual.name());
    }

    static void requireGeneration(SandboxRef ref, Located sandbox, OptionalLong expected) {
        Identity.requireExpectedGeneration(ref, expected, sandbox.stamps().generation());
    }

    static void refuseIfDeleting(SandboxRef ref, Located sandbox) {
        if (SandboxObjects.beingDeleted(sandbox.object())) {
            throw new DriverException(DriverErrorCode.FAILED_PRECONDITION, "sandbox " + ref.id() + " is being deleted");
        }
    }

    /** After a 409 or 404: the object now carrying the id must be the one that was read, else nothing is touched. */
    static void requireSameObject(SandboxRef ref, Located before, Located now) {
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

    Located located(GenericKubernetesResource object) {
        Stamps stamps = SandboxObjects.stamps(object)
                .orElseThrow(() -> new DriverException(
                        DriverErrorCode.INTERNAL,
                        "Sandbox " + object.getMetadata().getName() + " lost its sandgate stamps"));
        return new Located(object, stamps);
    }

    SandboxObservation observe(Located located) {
        return SandboxObjects.observe(located.object(), located.stamps(), version);
    }

    GenericKubernetesResource readByName(Located sandbox) {
        return KubernetesErrors.call(
                "read Sandbox " + sandbox.namespace() + "/" + sandbox.name(),
                () -> sandboxes()
                        .inNamespace(sandbox.namespace())
                        .withName(sandbox.name())
                        .get());
    }

    /**
     * Applies a JSON merge patch that carries the resourceVersion read. Returns the patched object, or empty when the
     * API server answered 409 or 404 and the object now carrying the id is the same one (changed meanwhile): the
     * caller decides again. Throws NOT_FOUND when the sandbox is gone and FAILED_PRECONDITION when it was replaced.
     */
    Optional<Located> patch(SandboxRef ref, Located sandbox, Map<String, Object> patch) {
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
    Located await(SandboxRef ref, Located sandbox, String what, Predicate<Located> done) {
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

    /**
     * DELETE with preconditions on the UID and resourceVersion that were read, and foreground propagation so that
     * the Sandbox disappears only after its pod, volume claim and Secret. fabric8's delete DSL sets only the
     * resourceVersion precondition, so the request is sent raw. Returns the HTTP status: 200 or 202 deleted, 409 a
     * precondition failed, 404 already gone.
     */
    int deleteWithPreconditions(Located sandbox) {
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

    /** Waits until no Sandbox of that name has the UID of {@code sandbox}; DEADLINE_EXCEEDED after the timeout. */
    void awaitGone(SandboxRef ref, Located sandbox) {
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

    /** The list and watch of this gateway's Sandbox objects, where this driver keeps them, for a watch loop. */
    SandboxWatchLoop.Source watchSource() {
        return new SandboxWatchLoop.Source() {
            @Override
            public SandboxWatchLoop.Listing list() {
                GenericKubernetesResourceList list =
                        scoped().withLabels(ownSelector()).list();
                // no resourceVersion (never from an API server): watch from "any", i.e. now
                String resourceVersion =
                        list.getMetadata() == null ? null : list.getMetadata().getResourceVersion();
                return new SandboxWatchLoop.Listing(list.getItems(), Objects.requireNonNullElse(resourceVersion, ""));
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
        };
    }

    /** Pauses between looks at a sandbox the controller is working on: 10 ms, doubling up to 500 ms. */
    static Backoff backoff() {
        return new Backoff(Duration.ofMillis(10), Duration.ofMillis(500));
    }
}
