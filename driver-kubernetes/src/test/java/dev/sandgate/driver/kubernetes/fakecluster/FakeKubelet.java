package dev.sandgate.driver.kubernetes.fakecluster;

import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.Objects.requireNonNull;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvFromSource;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.fabric8.mockwebserver.http.Response;
import io.fabric8.mockwebserver.http.WebSocket;
import io.fabric8.mockwebserver.http.WebSocketListener;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import java.net.URI;
import java.net.URLDecoder;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The fake cluster's kubelet and container runtime, behind the API server's {@code pods/exec} and {@code pods/log}:
 *
 * <ul>
 *   <li>each pod the API server creates gets its container, which runs the pod's command and arguments in a {@link
 *       FakeShell} with the container's environment (its {@code env} values, its {@code env} fields of the pod
 *       through the Downward API, and the Secrets of its {@code envFrom});
 *       the container's output is its log. When the command ends, the pod's status says so (phase Succeeded or
 *       Failed, the container terminated with its exit code). When the pod is deleted, its container is killed;
 *       a pod created under the same name later (a new UID) gets a new container with an empty log and file system;
 *   <li>{@code pods/exec} (a WebSocket upgrade, protocols {@code v5.channel.k8s.io} and {@code v4.channel.k8s.io}):
 *       runs the {@code command} parameters as a process of the container named by UID when the request arrives;
 *       channel 0 standard input, 1 standard output, 2 standard error (1 with a terminal), 3 the final Status with
 *       the exit code (NonZeroExitCode / ExitCode cause), 4 resize (ignored), and with v5, 255 closing standard
 *       input. A pod that is absent is 404, a container that is not running 400. Closing the stream kills the
 *       process (the real kubelet may leave it running);
 *   <li>{@code pods/log}: the container's output so far, since {@code sinceTime}, and with {@code follow} the rest
 *       of it until the container ends or is killed; {@code previous=true} is 400 (containers are never restarted).
 * </ul>
 */
public final class FakeKubelet {
    private static final Pattern EXEC = Pattern.compile("/api/v1/namespaces/([^/]+)/pods/([^/]+)/exec");
    private static final Pattern LOG = Pattern.compile("/api/v1/namespaces/([^/]+)/pods/([^/]+)/log");
    private static final String V5 = "v5.channel.k8s.io";
    private static final Pattern FIELD = Pattern.compile("metadata\\.(labels|annotations)\\['([^']+)'\\]");
    /** The end of an exec's standard input, in its queue of chunks. */
    private static final Chunk END_OF_INPUT = new Chunk(null);

    /** A chunk of standard input; a class, not a record: its bytes are never compared. */
    private static final class Chunk {
        private final byte[] data;

        Chunk(byte[] data) {
            this.data = data;
        }

        byte[] data() {
            return data;
        }
    }

    /** What the kubelet reads from and writes to the API server's store. */
    interface Store {
        Optional<Pod> pod(String namespace, String name);

        Optional<Secret> secret(String namespace, String name);

        /** Records in the pod's status that its container ended with {@code exitCode}. */
        void containerEnded(Pod pod, String container, int exitCode);
    }

    /** A command the kubelet started, with the UID of the pod whose container ran it. */
    public record Ran(String podUid, List<String> command) {
        public Ran {
            requireNonNull(podUid, "podUid is null");
            command = List.copyOf(command);
        }
    }

    private final Store store;
    private final Map<String, RunningContainer> containers = new ConcurrentHashMap<>();
    private final List<Ran> ran = new CopyOnWriteArrayList<>();
    private final List<String> logsServed = new CopyOnWriteArrayList<>();

    FakeKubelet(Store store) {
        this.store = requireNonNull(store, "store is null");
    }

    /** The API server created {@code pod}: start its (first) container. */
    void podCreated(Pod pod) {
        List<Container> specs =
                pod.getSpec() == null ? List.of() : pod.getSpec().getContainers();
        if (specs.isEmpty()) {
            return;
        }
        RunningContainer container = new RunningContainer(pod, specs.get(0));
        if (containers.putIfAbsent(pod.getMetadata().getUid(), container) == null) {
            container.start();
        }
    }

    /** The API server deleted the pod with {@code uid}: kill its container. */
    void podDeleted(String uid) {
        RunningContainer container = containers.remove(uid);
        if (container != null) {
            container.kill();
        }
    }

    /** Every command started so far, in order, with the pod it ran in. */
    List<Ran> ran() {
        return List.copyOf(ran);
    }

    /** The paths touched in the container of the pod with {@code uid} (empty once the pod is gone). */
    Set<String> files(String uid) {
        RunningContainer container = containers.get(uid);
        return container == null ? Set.of() : Set.copyOf(container.files);
    }

    /** The UIDs of the pods whose log was served so far, in order, one per {@code pods/log} answered with a log. */
    List<String> logsServed() {
        return List.copyOf(logsServed);
    }

    /** Kills every container. */
    void shutdown() {
        containers.values().forEach(RunningContainer::kill);
        containers.clear();
    }

    static boolean isExec(String path) {
        return EXEC.matcher(withoutQuery(path)).matches();
    }

    static boolean isLog(String path) {
        return LOG.matcher(withoutQuery(path)).matches();
    }

    // ---------------------------------------------------------------------------------------------------------------
    // pods/exec

    /** Answers a {@code pods/exec} request: an upgrade to the exec protocol, or the API server's error. */
    MockResponse exec(RecordedRequest request) {
        Matcher matcher = EXEC.matcher(withoutQuery(request.getPath()));
        if (!matcher.matches()) {
            throw new IllegalArgumentException("not an exec request: " + request.getPath());
        }
        Map<String, List<String>> query = query(request.getPath());
        Optional<Pod> pod = store.pod(matcher.group(1), matcher.group(2));
        if (pod.isEmpty()) {
            return error(404, "NotFound", "pods \"" + matcher.group(2) + "\" not found");
        }
        RunningContainer container = containers.get(pod.get().getMetadata().getUid());
        String wanted = first(query, "container").orElse("");
        if (container == null || !container.name().equals(wanted)) {
            return error(400, "BadRequest", "container " + wanted + " is not valid for pod " + matcher.group(2));
        }
        if (!container.running()) {
            return error(400, "BadRequest", "container " + wanted + " is not running");
        }
        List<String> command = query.getOrDefault("command", List.of());
        if (command.isEmpty()) {
            return error(400, "BadRequest", "you must specify at least 1 command");
        }
        String protocols =
                Optional.ofNullable(request.getHeader("Sec-WebSocket-Protocol")).orElse("");
        return new MockResponse()
                .withWebSocketUpgrade(new ExecSession(
                        container,
                        () -> ran.add(new Ran(pod.get().getMetadata().getUid(), command)),
                        command,
                        flag(query, "stdin"),
                        flag(query, "tty"),
                        Arrays.stream(protocols.split(",")).map(String::trim).anyMatch(V5::equals)));
    }

    private static final class ExecSession extends WebSocketListener {
        private final RunningContainer container;
        private final Runnable started;
        private final List<String> command;
        private final boolean stdin;
        private final boolean tty;
        private final boolean v5;
        private final LinkedBlockingQueue<Chunk> input = new LinkedBlockingQueue<>();
        private volatile Thread process;

        ExecSession(
                RunningContainer container,
                Runnable started,
                List<String> command,
                boolean stdin,
                boolean tty,
                boolean v5) {
            this.container = container;
            this.started = started;
            this.command = List.copyOf(command);
            this.stdin = stdin;
            this.tty = tty;
            this.v5 = v5;
            if (!stdin) {
                input.add(END_OF_INPUT);
            }
        }

        @Override
        public void onOpen(WebSocket webSocket, Response response) {
            started.run();
            process = Thread.ofVirtual().name("fake-exec").start(() -> run(webSocket));
            container.processes.add(process);
        }

        private void run(WebSocket webSocket) {
            FakeShell.Io io = new FakeShell.Io() {
                @Override
                public byte[] readStdin() throws InterruptedException {
                    Chunk chunk = input.take();
                    if (chunk.data() == null) {
                        input.add(END_OF_INPUT); // stays at its end
                    }
                    return chunk.data();
                }

                @Override
                public void stdout(byte[] data) {
                    webSocket.send(frame(1, data));
                }

                @Override
                public void stderr(byte[] data) {
                    webSocket.send(frame(tty ? 1 : 2, data));
                }
            };
            try {
                int exitCode = container.shell().run(command, container.environment(), io);
                webSocket.send(
                        frame(3, Serialization.asJson(exitStatus(exitCode)).getBytes(UTF_8)));
                webSocket.close(1000, "");
            } catch (InterruptedException e) {
                webSocket.close(1000, "killed");
            } finally {
                container.processes.remove(Thread.currentThread());
            }
        }

        @Override
        public void onMessage(WebSocket webSocket, byte[] bytes) {
            if (bytes.length == 0) {
                return;
            }
            switch (bytes[0]) {
                case 0 -> {
                    if (stdin && bytes.length > 1) {
                        input.add(new Chunk(Arrays.copyOfRange(bytes, 1, bytes.length)));
                    }
                }
                case (byte) 255 -> {
                    if (v5 && bytes.length > 1 && bytes[1] == 0) {
                        input.add(END_OF_INPUT);
                    }
                }
                default -> {
                    // 4: resize, nothing to do without a terminal
                }
            }
        }

        @Override
        public void onClosing(WebSocket webSocket, int code, String reason) {
            kill();
        }

        @Override
        public void onClosed(WebSocket webSocket, int code, String reason) {
            kill();
        }

        @Override
        public void onFailure(WebSocket webSocket, Throwable failure, Response response) {
            kill();
        }

        private void kill() {
            Thread running = process;
            if (running != null) {
                running.interrupt();
            }
        }
    }

    private static byte[] frame(int channel, byte[] data) {
        byte[] frame = new byte[data.length + 1];
        frame[0] = (byte) channel;
        System.arraycopy(data, 0, frame, 1, data.length);
        return frame;
    }

    /** The Status the API server sends on channel 3 when the command ended. */
    static Status exitStatus(int exitCode) {
        if (exitCode == 0) {
            return new StatusBuilder().withStatus("Success").build();
        }
        return new StatusBuilder()
                .withStatus("Failure")
                .withReason("NonZeroExitCode")
                .withMessage("command terminated with non-zero exit code: exit status " + exitCode)
                .withNewDetails()
                .addNewCause()
                .withReason("ExitCode")
                .withMessage(Integer.toString(exitCode))
                .endCause()
                .endDetails()
                .build();
    }

    // ---------------------------------------------------------------------------------------------------------------
    // pods/log

    /** Serves a {@code pods/log} request on the server's event loop; with follow, the response stays open. */
    void log(HttpServerRequest request) {
        String path = request.uri();
        Matcher matcher = LOG.matcher(withoutQuery(path));
        if (!matcher.matches()) {
            throw new IllegalArgumentException("not a log request: " + path);
        }
        Map<String, List<String>> query = query(path);
        HttpServerResponse response = request.response();
        Optional<Pod> pod = store.pod(matcher.group(1), matcher.group(2));
        if (pod.isEmpty()) {
            send(response, error(404, "NotFound", "pods \"" + matcher.group(2) + "\" not found"));
            return;
        }
        RunningContainer container = containers.get(pod.get().getMetadata().getUid());
        String wanted = first(query, "container").orElse("");
        if (container == null || !container.name().equals(wanted)) {
            send(
                    response,
                    error(400, "BadRequest", "container " + wanted + " is not valid for pod " + matcher.group(2)));
            return;
        }
        if (flag(query, "previous")) {
            send(
                    response,
                    error(
                            400,
                            "BadRequest",
                            "previous terminated container \"" + wanted + "\" in pod \"" + matcher.group(2)
                                    + "\" not found"));
            return;
        }
        Instant since = first(query, "sinceTime").map(Instant::parse).orElse(Instant.MIN);
        response.setStatusCode(200).setChunked(true).putHeader("Content-Type", "text/plain");
        logsServed.add(pod.get().getMetadata().getUid());
        container.serveLog(response, since, flag(query, "follow"));
    }

    private static void send(HttpServerResponse response, MockResponse answer) {
        Future<Void> unused = response.setStatusCode(answer.code())
                .putHeader("Content-Type", "application/json")
                .end(Buffer.buffer(answer.getBody().getBytes()));
    }

    // ---------------------------------------------------------------------------------------------------------------
    // containers

    /** One write to a container's log; a class, not a record: its bytes are never compared. */
    private static final class LogEntry {
        private final Instant time;
        private final byte[] data;

        LogEntry(Instant time, byte[] data) {
            this.time = time;
            this.data = data;
        }

        Instant time() {
            return time;
        }

        byte[] data() {
            return data;
        }
    }

    private final class RunningContainer {
        private final Pod pod;
        private final Container spec;
        private final Set<String> files = ConcurrentHashMap.newKeySet();
        private final Set<Thread> processes = ConcurrentHashMap.newKeySet();
        private final List<LogEntry> log = new ArrayList<>(); // guarded by this
        private final List<HttpServerResponse> followers = new ArrayList<>(); // guarded by this
        private boolean ended; // guarded by this
        private volatile boolean killed;
        private volatile Map<String, String> environment = Map.of();
        private volatile Thread main;

        RunningContainer(Pod pod, Container spec) {
            this.pod = pod;
            this.spec = spec;
        }

        String name() {
            return spec.getName();
        }

        FakeShell shell() {
            return new FakeShell(files);
        }

        Map<String, String> environment() {
            return environment;
        }

        synchronized boolean running() {
            return !ended;
        }

        void start() {
            main = Thread.ofVirtual()
                    .name("fake-container-" + pod.getMetadata().getName())
                    .start(this::runMain);
        }

        private void runMain() {
            List<String> argv = new ArrayList<>();
            argv.addAll(Optional.ofNullable(spec.getCommand()).orElse(List.of()));
            argv.addAll(Optional.ofNullable(spec.getArgs()).orElse(List.of()));
            int exitCode;
            try {
                environment = resolveEnvironment();
                exitCode = shell().run(argv, environment, new FakeShell.Io() {
                    @Override
                    public byte[] readStdin() {
                        return null;
                    }

                    @Override
                    public void stdout(byte[] data) {
                        append(data);
                    }

                    @Override
                    public void stderr(byte[] data) {
                        append(data);
                    }
                });
            } catch (InterruptedException e) {
                exitCode = 137;
            }
            end();
            if (!killed) {
                store.containerEnded(pod, name(), exitCode);
            }
        }

        /**
         * The container's environment; like the kubelet, it does not start before the Secrets of its {@code envFrom}
         * exist (the driver creates the Secret just after the Sandbox, the controller the pod meanwhile).
         */
        private Map<String, String> resolveEnvironment() throws InterruptedException {
            Map<String, String> resolved = new HashMap<>();
            String namespace = pod.getMetadata().getNamespace();
            for (EnvFromSource source : Optional.ofNullable(spec.getEnvFrom()).orElse(List.of())) {
                if (source.getSecretRef() == null) {
                    continue;
                }
                String secretName = source.getSecretRef().getName();
                Optional<Secret> secret = store.secret(namespace, secretName);
                while (secret.isEmpty()) {
                    Thread.sleep(10);
                    secret = store.secret(namespace, secretName);
                }
                Optional.ofNullable(secret.get().getData())
                        .orElse(Map.of())
                        .forEach((key, value) ->
                                resolved.put(key, new String(Base64.getDecoder().decode(value), UTF_8)));
                Optional.ofNullable(secret.get().getStringData())
                        .orElse(Map.of())
                        .forEach(resolved::put);
            }
            for (EnvVar variable : Optional.ofNullable(spec.getEnv()).orElse(List.of())) {
                if (variable.getValue() != null) {
                    resolved.put(variable.getName(), variable.getValue());
                } else if (variable.getValueFrom() != null
                        && variable.getValueFrom().getFieldRef() != null) {
                    resolved.put(
                            variable.getName(),
                            field(variable.getValueFrom().getFieldRef().getFieldPath()));
                }
            }
            return Map.copyOf(resolved);
        }

        /** A Downward API field of the pod: its uid, name, namespace, or one of its labels or annotations. */
        private String field(String path) {
            Matcher keyed = FIELD.matcher(path);
            if (keyed.matches()) {
                Map<String, String> map = keyed.group(1).equals("labels")
                        ? pod.getMetadata().getLabels()
                        : pod.getMetadata().getAnnotations();
                return Optional.ofNullable(map).map(m -> m.get(keyed.group(2))).orElse("");
            }
            return switch (path) {
                case "metadata.uid" -> pod.getMetadata().getUid();
                case "metadata.name" -> pod.getMetadata().getName();
                case "metadata.namespace" -> pod.getMetadata().getNamespace();
                default -> throw new IllegalArgumentException("field " + path + " is not simulated");
            };
        }

        private synchronized void append(byte[] data) {
            log.add(new LogEntry(Instant.now(), data.clone()));
            for (HttpServerResponse follower : followers) {
                write(follower, data);
            }
        }

        private synchronized void end() {
            ended = true;
            for (HttpServerResponse follower : followers) {
                finish(follower);
            }
            followers.clear();
        }

        synchronized void serveLog(HttpServerResponse response, Instant since, boolean follow) {
            for (LogEntry entry : log) {
                if (!entry.time().isBefore(since)) {
                    write(response, entry.data());
                }
            }
            if (follow && !ended) {
                followers.add(response);
                response.closeHandler(closed -> {
                    synchronized (this) {
                        followers.remove(response);
                    }
                });
            } else {
                finish(response);
            }
        }

        void kill() {
            killed = true;
            Thread running = main;
            if (running != null) {
                running.interrupt();
            }
            processes.forEach(Thread::interrupt);
        }
    }

    private static void write(HttpServerResponse response, byte[] data) {
        try {
            Future<Void> unused = response.write(Buffer.buffer(data));
        } catch (IllegalStateException e) {
            // the client went away
        }
    }

    private static void finish(HttpServerResponse response) {
        try {
            Future<Void> unused = response.end();
        } catch (IllegalStateException e) {
            // the client went away
        }
    }

    // ---------------------------------------------------------------------------------------------------------------

    static MockResponse error(int code, String reason, String message) {
        Status status = new StatusBuilder()
                .withStatus("Failure")
                .withReason(reason)
                .withMessage(message)
                .withCode(code)
                .build();
        return new MockResponse().setResponseCode(code).setBody(Serialization.asJson(status));
    }

    private static Map<String, List<String>> query(String path) {
        String raw = URI.create(path).getRawQuery();
        Map<String, List<String>> query = new LinkedHashMap<>();
        if (raw == null) {
            return query;
        }
        for (String pair : raw.split("&", -1)) {
            int equals = pair.indexOf('=');
            String key = URLDecoder.decode(equals < 0 ? pair : pair.substring(0, equals), UTF_8);
            String value = equals < 0 ? "" : URLDecoder.decode(pair.substring(equals + 1), UTF_8);
            query.computeIfAbsent(key, unused -> new ArrayList<>()).add(value);
        }
        return query;
    }

    private static Optional<String> first(Map<String, List<String>> query, String key) {
        return query.getOrDefault(key, List.of()).stream().findFirst();
    }

    private static boolean flag(Map<String, List<String>> query, String key) {
        return first(query, key).map(Boolean::parseBoolean).orElse(false);
    }

    private static String withoutQuery(String path) {
        int query = path.indexOf('?');
        return query < 0 ? path : path.substring(0, query);
    }
}
