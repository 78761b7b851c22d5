package dev.sandgate.driver.kubernetes.fakecluster;

import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.Objects.requireNonNull;

import io.fabric8.kubernetes.api.model.APIResourceBuilder;
import io.fabric8.kubernetes.api.model.APIResourceListBuilder;
import io.fabric8.kubernetes.api.model.ContainerStatusBuilder;
import io.fabric8.kubernetes.api.model.DeleteOptions;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Preconditions;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.client.dsl.base.CustomResourceDefinitionContext;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.dsl.HttpMethod;
import io.fabric8.mockwebserver.http.Buffer;
import io.fabric8.mockwebserver.http.Headers;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.fabric8.mockwebserver.http.Response;
import io.fabric8.mockwebserver.http.WebSocket;
import io.fabric8.mockwebserver.http.WebSocketListener;
import io.vertx.core.http.HttpServerRequest;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * fabric8's CRUD mock dispatcher, made to behave like the API server where the driver's correctness depends on it:
 *
 * <ul>
 *   <li><b>DeleteOptions preconditions.</b> The mock deletes regardless of {@code preconditions.uid} and {@code
 *       preconditions.resourceVersion}. Here a DELETE of one object whose stored UID or resourceVersion differs from
 *       the precondition is answered 409 Conflict with the API server's Status, and the object survives.
 *   <li><b>Foreground deletion.</b> {@code propagationPolicy: Foreground} adds the {@code foregroundDeletion}
 *       finalizer before the delete, so the object stays (with a deletionTimestamp) until the garbage collector has
 *       removed its dependents and the finalizer ({@link FakeAgentSandboxController} plays the collector).
 *   <li><b>Stale updates of the status subresource.</b> The mock checks {@code resourceVersion} on PUT and PATCH of
 *       an object but not on PUT of its {@code /status}; here that is a 409 too.
 *   <li><b>Discovery.</b> {@code GET /apis/<group>/<version>} of a registered custom resource group answers that
 *       version's resources when it is served and 404 when it is not (the mock answers any version, and once
 *       objects exist it answers a list of them instead).
 *   <li><b>JSON merge patch.</b> The mock merges arrays element by element and stores {@code null}s; here a merge
 *       patch replaces arrays and removes keys set to {@code null}, as RFC 7386 says.
 * </ul>
 *
 * <ul>
 *   <li><b>Validation.</b> An object that names the image {@link #REFUSED_IMAGE} is refused at create with 422
 *       Invalid, as an API server refuses an object its schema or an admission policy rejects: the kit's spec that
 *       the backend refuses for good.
 * </ul>
 *
 * Every mutation is handled under one lock, so a precondition check and the delete it guards are atomic. Every
 * request is recorded with its User-Agent, so a test can tell which client made it.
 */
public final class PreconditionEnforcingDispatcher extends KubernetesCrudDispatcher {
    /** A request as the server received it. */
    public record ReceivedRequest(String method, String path, String userAgent) {
        public ReceivedRequest {
            requireNonNull(method, "method is null");
            requireNonNull(path, "path is null");
            userAgent = Objects.requireNonNullElse(userAgent, "");
        }
    }

    /** The image of an object this API server refuses at create (422 Invalid). */
    public static final String REFUSED_IMAGE = "refused.invalid/sandgate-kit/refused:1";

    static final String FOREGROUND_FINALIZER = "foregroundDeletion";
    private static final Pattern POD = Pattern.compile("/api/v1/namespaces/[^/]+/pods/[^/]+");
    private static final Pattern POD_STREAM = Pattern.compile("/api/v1/namespaces/([^/]+)/pods/([^/]+)/(exec|log)");
    private static final Pattern POD_COLLECTION = Pattern.compile("/api/v1/namespaces/[^/]+/pods/?");
    private static final Pattern DISCOVERY = Pattern.compile("/apis/([^/?]+)/([^/?]+)/?");

    private final List<CustomResourceDefinitionContext> served;
    private final List<ReceivedRequest> received = new CopyOnWriteArrayList<>();
    private final Object writes = new Object();
    private final FakeKubelet kubelet = new FakeKubelet(new KubeletStore());
    /** The pod ("namespace/name") to replace once the kubelet took the next exec or log request for it. */
    private final AtomicReference<String> replaceAfterNextStream = new AtomicReference<>();
    /** The pod ("namespace/name") to replace when the next exec request for it arrives, and its new labels. */
    private final AtomicReference<Map.Entry<String, Map<String, String>>> replaceBeforeNextExec =
            new AtomicReference<>();

    public PreconditionEnforcingDispatcher(List<CustomResourceDefinitionContext> served) {
        super(served);
        this.served = List.copyOf(served);
    }

    /** The kubelet behind {@code pods/exec} and {@code pods/log}. */
    FakeKubelet kubelet() {
        return kubelet;
    }

    /** A {@code pods/log} request, which the server streams itself (see {@link FakeApiServer}); recorded too. */
    void serveLog(HttpServerRequest request) {
        received.add(new ReceivedRequest(request.method().name(), request.uri(), request.getHeader("User-Agent")));
        kubelet.log(request);
        replaceIfArmed(request.uri());
    }

    private final class KubeletStore implements FakeKubelet.Store {
        @Override
        public Optional<Pod> pod(String namespace, String name) {
            return read("/api/v1/namespaces/" + namespace + "/pods/" + name, Pod.class);
        }

        @Override
        public Optional<Secret> secret(String namespace, String name) {
            return read("/api/v1/namespaces/" + namespace + "/secrets/" + name, Secret.class);
        }

        @Override
        public void containerEnded(Pod pod, String container, int exitCode) {
            String path = "/api/v1/namespaces/" + pod.getMetadata().getNamespace() + "/pods/"
                    + pod.getMetadata().getName();
            synchronized (writes) {
                Optional<Pod> current = read(path, Pod.class);
                if (current.isEmpty()
                        || !current.get()
                                .getMetadata()
                                .getUid()
                                .equals(pod.getMetadata().getUid())) {
                    return; // deleted or replaced meanwhile
                }
                Pod ended = current.get();
                ended.getStatus().setPhase(exitCode == 0 ? "Succeeded" : "Failed");
                ended.getStatus()
                        .setContainerStatuses(List.of(new ContainerStatusBuilder()
                                .withName(container)
                                .withReady(false)
                                .withNewState()
                                .withNewTerminated()
                                .withExitCode(exitCode)
                                .withReason(exitCode == 0 ? "Completed" : "Error")
                                .endTerminated()
                                .endState()
                                .build()));
                PreconditionEnforcingDispatcher.super.dispatch(synthetic(HttpMethod.PUT, path + "/status", ended));
            }
        }

        private <T> Optional<T> read(String path, Class<T> type) {
            MockResponse response = handleGet(path);
            if (response.code() != 200) {
                return Optional.empty();
            }
            return Optional.ofNullable(
                    Serialization.unmarshal(new String(response.getBody().getBytes(), UTF_8), type));
        }
    }

    /**
     * Once the kubelet has taken the next {@code pods/exec} or {@code pods/log} request for the pod {@code
     * namespace/name} (its container chosen by the pod's UID), and before the answer leaves: deletes that pod and
     * creates it again under the same name with a new UID, as a controller replacing a pod would. What reached the
     * kubelet ran in, or was read from, the pod that is gone; the next read of the pod finds the replacement.
     */
    public void replacePodAfterNextStream(String namespace, String name) {
        replaceAfterNextStream.set(namespace + "/" + name);
    }

    /**
     * When the next {@code pods/exec} request for the pod {@code namespace/name} arrives, before the kubelet picks its
     * container: replaces that pod as {@link #replacePodAfterNextStream} does, the replacement carrying {@code
     * labels} over the old pod's (another execution's pod, as a stop and start would make). The exec reaches the
     * replacement.
     */
    public void replacePodBeforeNextExec(String namespace, String name, Map<String, String> labels) {
        replaceBeforeNextExec.set(Map.entry(namespace + "/" + name, Map.copyOf(labels)));
    }

    private void replaceIfArmed(String requestPath) {
        Matcher stream = POD_STREAM.matcher(withoutQuery(requestPath));
        if (!stream.matches()) {
            return;
        }
        String pod = stream.group(1) + "/" + stream.group(2);
        if (pod.equals(replaceAfterNextStream.getAndUpdate(armed -> pod.equals(armed) ? null : armed))) {
            replace(stream.group(1), stream.group(2), Map.of());
        }
    }

    private void replaceBeforeExecIfArmed(String requestPath) {
        Matcher stream = POD_STREAM.matcher(withoutQuery(requestPath));
        if (!stream.matches()) {
            return;
        }
        String pod = stream.group(1) + "/" + stream.group(2);
        Map.Entry<String, Map<String, String>> armed =
                replaceBeforeNextExec.getAndUpdate(entry -> entry != null && pod.equals(entry.getKey()) ? null : entry);
        if (armed != null && pod.equals(armed.getKey())) {
            replace(stream.group(1), stream.group(2), armed.getValue());
        }
    }

    private void replace(String namespace, String name, Map<String, String> labels) {
        String path = "/api/v1/namespaces/" + namespace + "/pods/" + name;
        synchronized (writes) {
            Pod old = new KubeletStore()
                    .pod(namespace, name)
                    .orElseThrow(() -> new IllegalStateException("no pod " + path + " to replace"));
            handleDelete(path);
            kubelet.podDeleted(old.getMetadata().getUid());
            Pod replacement = new PodBuilder(old)
                    .editMetadata()
                    .withUid(null)
                    .withResourceVersion(null)
                    .withCreationTimestamp(null)
                    .addToLabels(labels)
                    .endMetadata()
                    .build();
            MockResponse created = super.dispatch(
                    synthetic(HttpMethod.POST, "/api/v1/namespaces/" + namespace + "/pods", replacement));
            kubelet.podCreated(
                    Serialization.unmarshal(new String(created.getBody().getBytes(), UTF_8), Pod.class));
        }
    }

    /** Every request received so far, in order. */
    public List<ReceivedRequest> received() {
        return List.copyOf(received);
    }

    @Override
    public MockResponse dispatch(RecordedRequest request) {
        received.add(new ReceivedRequest(request.getMethod(), request.getPath(), request.getHeader("User-Agent")));
        HttpMethod method = request.method();
        if (method == HttpMethod.GET && FakeKubelet.isExec(request.getPath())) {
            replaceBeforeExecIfArmed(request.getPath());
            MockResponse answer = kubelet.exec(request);
            replaceIfArmed(request.getPath());
            return answer;
        }
        if (method == HttpMethod.GET) {
            return discovery(request.getPath()).orElseGet(() -> super.dispatch(request));
        }
        synchronized (writes) {
            if (method == HttpMethod.DELETE) {
                return delete(request);
            }
            if (method == HttpMethod.PUT) {
                return update(request);
            }
            if (method == HttpMethod.PATCH && isMergePatch(request)) {
                return mergePatch(request);
            }
            if (method == HttpMethod.POST && names(request, REFUSED_IMAGE)) {
                return invalid("spec.podTemplate.spec.containers[0].image: Invalid value: \"" + REFUSED_IMAGE
                        + "\": refused by the cluster's image policy");
            }
            MockResponse response = super.dispatch(request);
            if (method == HttpMethod.POST
                    && POD_COLLECTION.matcher(withoutQuery(request.getPath())).matches()
                    && response.code() < 300) {
                kubelet.podCreated(
                        Serialization.unmarshal(new String(response.getBody().getBytes(), UTF_8), Pod.class));
            }
            return response;
        }
    }

    /**
     * The mock's watch listener sends events from its own thread, and each send blocks until the Vert.x event loop
     * has written it. When the client closes the watch, the listener waits on that event loop for its sender thread
     * to finish: with an event in flight both wait for each other until the mock's 30 s write timeout, and every
     * request on that event loop waits too. Here sends are handed to one more thread per watch, in order, so the
     * listener's thread never blocks and closing returns at once.
     */
    @Override
    public MockResponse handleWatch(String path) {
        WebSocketListener listener = super.handleWatch(path).getWebSocketListener();
        return new MockResponse().withWebSocketUpgrade(new NonBlockingSends(listener));
    }

    private static final class NonBlockingSends extends WebSocketListener {
        private final WebSocketListener delegate;
        private final ExecutorService sender = Executors.newSingleThreadExecutor(runnable -> {
            Thread thread = new Thread(runnable, "mock-watch-sender");
            thread.setDaemon(true);
            return thread;
        });
        private volatile WebSocket wrapped;

        NonBlockingSends(WebSocketListener delegate) {
            this.delegate = delegate;
        }

        private WebSocket wrap(WebSocket webSocket) {
            if (wrapped == null) {
                wrapped = new WebSocket() {
                    @Override
                    public RecordedRequest request() {
                        return webSocket.request();
                    }

                    @Override
                    public boolean send(String text) {
                        return submit(() -> webSocket.send(text));
                    }

                    @Override
                    public boolean send(byte[] bytes) {
                        return submit(() -> webSocket.send(bytes));
                    }

                    @Override
                    public boolean close(int code, String reason) {
                        return webSocket.close(code, reason);
                    }
                };
            }
            return wrapped;
        }

        private boolean submit(Runnable send) {
            try {
                sender.execute(send);
                return true;
            } catch (RejectedExecutionException e) {
                return false; // closed
            }
        }

        @Override
        public void onBeforeAccept(WebSocket webSocket, Response response) {
            delegate.onBeforeAccept(wrap(webSocket), response);
        }

        @Override
        public void onOpen(WebSocket webSocket, Response response) {
            delegate.onOpen(wrap(webSocket), response);
        }

        @Override
        public void onMessage(WebSocket webSocket, String text) {
            delegate.onMessage(wrap(webSocket), text);
        }

        @Override
        public void onMessage(WebSocket webSocket, byte[] bytes) {
            delegate.onMessage(wrap(webSocket), bytes);
        }

        @Override
        public void onPing(WebSocket webSocket, byte[] bytes) {
            delegate.onPing(wrap(webSocket), bytes);
        }

        @Override
        public void onClosing(WebSocket webSocket, int code, String reason) {
            delegate.onClosing(wrap(webSocket), code, reason);
        }

        @Override
        public void onClosed(WebSocket webSocket, int code, String reason) {
            delegate.onClosed(wrap(webSocket), code, reason);
            sender.shutdown();
        }

        @Override
        public void onFailure(WebSocket webSocket, Throwable failure, Response response) {
            delegate.onFailure(wrap(webSocket), failure, response);
            sender.shutdown();
        }
    }

    private MockResponse delete(RecordedRequest request) {
        String path = request.getPath();
        Optional<GenericKubernetesResource> current = stored(withoutQuery(path));
        if (current.isEmpty()) {
            return super.dispatch(request); // a collection, or nothing there: the mock's own answer
        }
        DeleteOptions options = deleteOptions(request.getBody());
        Preconditions preconditions = options.getPreconditions();
        GenericKubernetesResource object = current.get();
        if (preconditions != null) {
            String uid = object.getMetadata().getUid();
            String resourceVersion = object.getMetadata().getResourceVersion();
            if (preconditions.getUid() != null && !preconditions.getUid().equals(uid)) {
                return conflict(
                        object,
                        path,
                        "Precondition failed: UID in precondition: " + preconditions.getUid() + ", UID in object meta: "
                                + uid);
            }
            if (preconditions.getResourceVersion() != null
                    && !preconditions.getResourceVersion().equals(resourceVersion)) {
                return conflict(
                        object,
                        path,
                        "Precondition failed: ResourceVersion in precondition: "
                                + preconditions.getResourceVersion() + ", ResourceVersion in object meta: "
                                + resourceVersion);
            }
        }
        if ("Foreground".equals(options.getPropagationPolicy())
                && object.getMetadata().getDeletionTimestamp() == null
                && !object.getMetadata().getFinalizers().contains(FOREGROUND_FINALIZER)) {
            object.getMetadata().getFinalizers().add(FOREGROUND_FINALIZER);
            MockResponse updated = super.dispatch(synthetic(HttpMethod.PUT, withoutQuery(path), object));
            if (updated.code() >= 300) {
                return updated;
            }
        }
        MockResponse deleted = handleDelete(path);
        if (deleted.code() < 300 && POD.matcher(withoutQuery(path)).matches()) {
            kubelet.podDeleted(object.getMetadata().getUid());
        }
        return deleted;
    }

    private MockResponse update(RecordedRequest request) {
        String path = withoutQuery(request.getPath());
        if (path.endsWith("/status")) {
            GenericKubernetesResource update = Serialization.unmarshal(
                    new String(request.getBody().getBytes(), UTF_8), GenericKubernetesResource.class);
            String objectPath = path.substring(0, path.length() - "/status".length());
            Optional<GenericKubernetesResource> current = stored(objectPath);
            String basedOn = update == null || update.getMetadata() == null
                    ? null
                    : update.getMetadata().getResourceVersion();
            if (current.isPresent()
                    && basedOn != null
                    && !basedOn.isEmpty()
                    && !basedOn.equals(current.get().getMetadata().getResourceVersion())) {
                return conflict(
                        current.get(),
                        objectPath,
                        "Operation cannot be fulfilled on " + current.get().getKind() + " \""
                                + current.get().getMetadata().getName()
                                + "\": the object has been modified; please apply your changes to the latest"
                                + " version and try again");
            }
        }
        return super.dispatch(request);
    }

    private static boolean isMergePatch(RecordedRequest request) {
        String contentType = request.getHeader("Content-Type");
        return contentType != null && contentType.startsWith("application/merge-patch+json");
    }

    /**
     * A JSON merge patch applied as RFC 7386 says (the mock merges arrays element by element instead of replacing
     * them): the patched object is written as an update, which checks a resourceVersion the patch carries.
     */
    @SuppressWarnings("unchecked")
    private MockResponse mergePatch(RecordedRequest request) {
        String path = withoutQuery(request.getPath());
        boolean status = path.endsWith("/status");
        String objectPath = status ? path.substring(0, path.length() - "/status".length()) : path;
        Optional<GenericKubernetesResource> current = stored(objectPath);
        if (current.isEmpty()) {
            return super.dispatch(request);
        }
        Map<String, Object> patch =
                Serialization.unmarshal(new String(request.getBody().getBytes(), UTF_8), Map.class);
        Map<String, Object> target = Serialization.unmarshal(Serialization.asJson(current.get()), Map.class);
        Object merged = merge(target, patch);
        return update(synthetic(HttpMethod.PUT, path, merged));
    }

    @SuppressWarnings("unchecked")
    private static Object merge(Object target, Object patch) {
        if (!(patch instanceof Map<?, ?> patchMap)) {
            return patch;
        }
        Map<String, Object> result = target instanceof Map<?, ?> targetMap
                ? new LinkedHashMap<>((Map<String, Object>) targetMap)
                : new LinkedHashMap<>();
        patchMap.forEach((key, value) -> {
            if (value == null) {
                result.remove((String) key);
            } else {
                result.put((String) key, merge(result.get(key), value));
            }
        });
        return result;
    }

    private static RecordedRequest synthetic(HttpMethod method, String path, Object body) {
        return new RecordedRequest(
                "HTTP/1.1",
                method,
                path,
                Headers.builder().add("Content-Type", "application/json").build(),
                new Buffer(Serialization.asJson(body).getBytes(UTF_8)));
    }

    /** The object stored at {@code path}, if the path names one object and it exists. */
    private Optional<GenericKubernetesResource> stored(String path) {
        if (!getKey(path).containsKey("name")) {
            return Optional.empty();
        }
        MockResponse response = handleGet(path);
        if (response.code() != 200) {
            return Optional.empty();
        }
        return Optional.ofNullable(Serialization.unmarshal(
                new String(response.getBody().getBytes(), UTF_8), GenericKubernetesResource.class));
    }

    private static DeleteOptions deleteOptions(Buffer body) {
        String json = body == null ? "" : new String(body.getBytes(), UTF_8);
        if (json.isBlank()) {
            return new DeleteOptions();
        }
        return Serialization.unmarshal(json, DeleteOptions.class);
    }

    private static boolean names(RecordedRequest request, String image) {
        return request.getBody() != null
                && new String(request.getBody().getBytes(), UTF_8).contains("\"" + image + "\"");
    }

    /** 422 Invalid as the API server answers an object it refuses. */
    private static MockResponse invalid(String message) {
        Status status = new StatusBuilder()
                .withStatus("Failure")
                .withReason("Invalid")
                .withMessage(message)
                .withCode(422)
                .build();
        return new MockResponse().setResponseCode(422).setBody(Serialization.asJson(status));
    }

    /** 409 Conflict as the API server answers it; {@code path} names the object. */
    private static MockResponse conflict(GenericKubernetesResource object, String path, String message) {
        Status status = new StatusBuilder()
                .withStatus("Failure")
                .withReason("Conflict")
                .withMessage(message)
                .withCode(409)
                .withNewDetails()
                .withName(object.getMetadata().getName())
                .withGroup(groupOf(object.getApiVersion()))
                .withKind(pluralOf(path))
                .endDetails()
                .build();
        return new MockResponse().setResponseCode(409).setBody(Serialization.asJson(status));
    }

    private Optional<MockResponse> discovery(String path) {
        Matcher matcher = DISCOVERY.matcher(path);
        if (!matcher.matches()) {
            return Optional.empty();
        }
        String group = matcher.group(1);
        String version = matcher.group(2);
        if (served.stream().noneMatch(context -> context.getGroup().equals(group))) {
            return Optional.empty();
        }
        List<CustomResourceDefinitionContext> resources = served.stream()
                .filter(context ->
                        context.getGroup().equals(group) && context.getVersion().equals(version))
                .toList();
        if (resources.isEmpty()) {
            Status notFound = new StatusBuilder()
                    .withStatus("Failure")
                    .withReason("NotFound")
                    .withMessage("the server could not find the requested resource")
                    .withCode(404)
                    .build();
            return Optional.of(new MockResponse().setResponseCode(404).setBody(Serialization.asJson(notFound)));
        }
        var list = new APIResourceListBuilder().withGroupVersion(group + "/" + version);
        for (CustomResourceDefinitionContext context : resources) {
            list.addToResources(new APIResourceBuilder()
                    .withName(context.getPlural())
                    .withKind(context.getKind())
                    .withNamespaced(context.isNamespaceScoped())
                    .withVerbs("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")
                    .build());
            if (context.isStatusSubresource()) {
                list.addToResources(new APIResourceBuilder()
                        .withName(context.getPlural() + "/status")
                        .withKind(context.getKind())
                        .withNamespaced(context.isNamespaceScoped())
                        .withVerbs("get", "patch", "update")
                        .build());
            }
        }
        return Optional.of(new MockResponse().setResponseCode(200).setBody(Serialization.asJson(list.build())));
    }

    private static String withoutQuery(String path) {
        int query = path.indexOf('?');
        return query < 0 ? path : path.substring(0, query);
    }

    private static String groupOf(String apiVersion) {
        int slash = apiVersion == null ? -1 : apiVersion.indexOf('/');
        return slash < 0 ? "" : apiVersion.substring(0, slash);
    }

    private static String pluralOf(String path) {
        String[] segments = withoutQuery(path).split("/", -1);
        return segments.length >= 2 ? segments[segments.length - 2] : "";
    }
}
