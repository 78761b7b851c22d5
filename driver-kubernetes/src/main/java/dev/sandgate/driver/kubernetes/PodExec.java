package dev.sandgate.driver.kubernetes;

import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.kubernetes.ExecutionPods.PinnedPod;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.StreamKind;
import dev.sandgate.spi.TerminalSize;
import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.api.model.StatusCause;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.http.WebSocket;
import io.fabric8.kubernetes.client.http.WebSocketHandshakeException;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One command run through the API server's {@code pods/exec} subresource, over a WebSocket speaking the channel
 * protocol {@code v5.channel.k8s.io} (Kubernetes 1.30 and later): each binary message starts with its channel, 0
 * standard input, 1 standard output, 2 standard error, 3 the final {@code Status} (exit code), 4 terminal resize, 255
 * close a channel (v5: ends standard input). fabric8's own exec speaks v4, which cannot end standard input, so the
 * driver speaks the protocol itself over fabric8's HTTP client (same credentials and TLS).
 *
 * <p>Every command runs under an in-pod guard, {@code sh -c GUARD G ARGV...} ({@link #GUARD}): the container's
 * {@code SANDGATE_GENERATION} (its pod's generation label, through the Downward API) must equal the execution {@code
 * G} the exec was meant for, else the command is not run; the guard writes {@link #REFUSAL} to standard error and
 * exits 125. A pod replaced under the same name after the driver read it, before the request reached the kubelet,
 * thus never runs the command. That refusal, as the first output followed by exit 125, is reported as
 * FAILED_PRECONDITION with a {@code generation} mismatch instead of as output and an exit.
 *
 * <p>Output is withheld until {@link #admit()}: the driver first confirms that the stream reached the pinned pod.
 * One message is read at a time (the next only after the listener took the previous one), so a slow listener slows
 * the command down.
 */
final class PodExec implements ExecProcess, WebSocket.Listener, ExecutionPods.HeldStream {
    static final String PROTOCOL = "v5.channel.k8s.io";
    private static final byte STDIN = 0;
    private static final byte STDOUT = 1;
    private static final byte STDERR = 2;
    private static final byte STATUS = 3;
    private static final byte RESIZE = 4;
    private static final byte CLOSE = (byte) 255;

    /** The first words of the guard's refusal on standard error. */
    static final String REFUSAL = "sandgate: not execution ";

    private static final String RUNS = ", the pod runs execution ";

    /** The exit code of the guard's refusal. */
    static final int REFUSED = 125;

    /**
     * The guard: {@code $0} is the generation, {@code "$@"} the command. Needs {@code sh} in the image. No {@code ;}
     * inside quotes, no output before the refusal.
     */
    static final String GUARD = "[ \"$" + SandboxManifests.GENERATION_VARIABLE + "\" = \"$0\" ] && exec \"$@\"; echo \""
            + REFUSAL + "$0" + RUNS + "$" + SandboxManifests.GENERATION_VARIABLE + "\" >&2; exit " + REFUSED;

    private final KubernetesClient client;
    private final long generation;
    private final ExecCommand command;
    private final ExecListener listener;
    private final CountDownLatch admitted = new CountDownLatch(1);
    private final ExecutorService delivery;
    private final AtomicBoolean ended = new AtomicBoolean();
    private final AtomicBoolean stdinClosed = new AtomicBoolean();
    private volatile WebSocket webSocket;
    private volatile boolean abandoned;
    // the delivery thread's: whether output went to the listener, and a first chunk that may be the guard's refusal
    private boolean delivered;
    private StreamKind heldKind;
    private byte[] held;

    private PodExec(KubernetesClient client, long generation, ExecCommand command, ExecListener listener) {
        this.client = client;
        this.generation = generation;
        this.command = command;
        this.listener = listener;
        this.delivery = Executors.newSingleThreadExecutor(
                Thread.ofVirtual().name("kubernetes-exec-delivery").factory());
    }

    /**
     * Opens the exec stream to {@code pod} and waits until it is open; output is held back until {@link #admit()}.
     * Throws NOT_FOUND-free answers only: a refusal of the API server is FAILED_PRECONDITION (the pod or container is
     * not there or does not run), UNAVAILABLE, or INVALID_ARGUMENT.
     */
    static PodExec open(
            KubernetesClient client, PinnedPod pod, ExecCommand command, ExecListener listener, Duration timeout) {
        PodExec exec = new PodExec(requireNonNull(client, "client is null"), pod.generation(), command, listener);
        URI uri = WebSocket.toWebSocketUri(
                URI.create(client.getMasterUrl().toString().replaceAll("/+$", "") + path(pod) + "?"
                        + query(pod.generation(), command)));
        CompletableFuture<WebSocket> connecting = client.getHttpClient()
                .newWebSocketBuilder()
                .uri(uri)
                .subprotocol(PROTOCOL)
                .buildAsync(exec);
        try {
            exec.webSocket = connecting.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            return exec;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            exec.abandon();
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "interrupted while opening the exec stream", e);
        } catch (TimeoutException e) {
            exec.abandon();
            throw new DriverException(
                    DriverErrorCode.DEADLINE_EXCEEDED,
                    "the exec stream to pod " + pod.namespace() + "/" + pod.name() + " did not open within " + timeout,
                    e);
        } catch (ExecutionException e) {
            exec.abandon();
            throw refusal(pod, e.getCause());
        }
    }

    private static String path(PinnedPod pod) {
        return "/api/v1/namespaces/" + encode(pod.namespace()) + "/pods/" + encode(pod.name()) + "/exec";
    }

    /**
     * The exec query: the command under the {@link #GUARD} of execution {@code generation}. Kubernetes exec has no
     * environment parameter: extra variables are passed by running the command under {@code env NAME=VALUE...}, so
     * they appear in the request's query string (see docs/drivers/kubernetes.md). With a terminal there is no
     * separate standard error (the API refuses both).
     */
    static String query(long generation, ExecCommand command) {
        List<String> argv = new ArrayList<>(List.of("sh", "-c", GUARD, Long.toString(generation)));
        if (!command.environment().isEmpty()) {
            argv.add("env");
            command.environment().entrySet().stream()
                    .sorted(Map.Entry.comparingByKey())
                    .forEach(variable -> argv.add(variable.getKey() + "=" + variable.getValue()));
        }
        argv.addAll(command.command());
        StringBuilder query = new StringBuilder("container=").append(encode(ExecutionPods.CONTAINER));
        for (String word : argv) {
            query.append("&command=").append(encode(word));
        }
        query.append("&stdin=").append(command.stdin());
        query.append("&stdout=true");
        query.append("&stderr=").append(!command.tty());
        query.append("&tty=").append(command.tty());
        return query.toString();
    }

    private static String encode(String value) {
        return URLEncoder.encode(value, UTF_8).replace("+", "%20");
    }

    private static DriverException refusal(PinnedPod pod, Throwable cause) {
        String where = "pod " + pod.namespace() + "/" + pod.name();
        if (cause instanceof WebSocketHandshakeException handshake && handshake.getResponse() != null) {
            int code = handshake.getResponse().code();
            String body;
            try {
                body = handshake.getResponse().bodyString();
            } catch (java.io.IOException | RuntimeException e) {
                body = "";
            }
            String reason = "the Kubernetes API refused to exec in " + where + " (HTTP " + code + ")"
                    + (body == null || body.isBlank() ? "" : ": " + body);
            return switch (code) {
                // the pod is gone or its container does not run (any more): the execution does not run
                case 400, 404, 409 ->
                    new DriverException(
                            DriverErrorCode.FAILED_PRECONDITION,
                            reason,
                            List.of(new dev.sandgate.spi.Mismatch("running", "true", "false")),
                            cause);
                case 401, 403 ->
                    new DriverException(
                            DriverErrorCode.UNAVAILABLE,
                            reason + " (check the gateway's RBAC for pods/exec: docs/drivers/kubernetes.md)",
                            cause);
                default -> new DriverException(DriverErrorCode.UNAVAILABLE, reason, cause);
            };
        }
        return new DriverException(
                DriverErrorCode.UNAVAILABLE, "cannot open the exec stream to " + where + ": " + cause, cause);
    }

    /** Lets the output through: the stream is known to have reached the pinned pod. */
    @Override
    public void admit() {
        admitted.countDown();
    }

    /** Closes the stream without a single callback: the exec is refused after all. */
    @Override
    public void abandon() {
        abandoned = true;
        ended.set(true);
        admitted.countDown();
        delivery.shutdownNow();
        WebSocket socket = webSocket;
        if (socket != null) {
            socket.sendClose(1000, "refused");
        } // else onOpen closes a stream that opens late
    }

    // ---------------------------------------------------------------------------------------------------------------
    // WebSocket.Listener: called serially by the HTTP client

    @Override
    public void onOpen(WebSocket socket) {
        webSocket = socket;
        if (abandoned) {
            socket.sendClose(1000, "refused");
        }
    }

    @Override
    public void onMessage(WebSocket socket, ByteBuffer bytes) {
        if (!bytes.hasRemaining()) {
            socket.request();
            return;
        }
        byte channel = bytes.get();
        byte[] data = new byte[bytes.remaining()];
        bytes.get(data);
        deliver(() -> {
            switch (channel) {
                case STDOUT -> output(StreamKind.STDOUT, data);
                case STDERR -> output(StreamKind.STDERR, data);
                case STATUS -> finish(data);
                default -> {
                    // another channel's message (none is sent to a client): ignored
                }
            }
            socket.request();
        });
    }

    @Override
    public void onMessage(WebSocket socket, String text) {
        onMessage(socket, ByteBuffer.wrap(text.getBytes(UTF_8)));
    }

    @Override
    public void onClose(WebSocket socket, int code, String reason) {
        deliver(() -> fail(new DriverException(
                DriverErrorCode.UNAVAILABLE,
                "the exec stream ended without the command's exit status (WebSocket close " + code
                        + (reason == null || reason.isBlank() ? "" : ": " + reason) + "); its outcome is unknown")));
    }

    @Override
    public void onError(WebSocket socket, Throwable error) {
        if (webSocket == null) {
            return; // not open: the connecting future fails with it
        }
        deliver(() -> fail(new DriverException(
                DriverErrorCode.UNAVAILABLE,
                "the exec stream failed: " + error.getMessage() + "; the command's outcome is unknown",
                error)));
    }

    /** Runs {@code callback} on the delivery thread once admitted, unless the exec ended meanwhile. */
    private void deliver(Runnable callback) {
        try {
            delivery.execute(() -> {
                try {
                    admitted.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                if (!ended.get() && !abandoned) {
                    callback.run();
                }
            });
        } catch (RejectedExecutionException e) {
            // closed: no more callbacks
        }
    }

    /** Passes output on, except a first chunk that may be the guard's refusal: held until the next message. */
    private void output(StreamKind kind, byte[] data) {
        if (!delivered && held == null && new String(data, UTF_8).startsWith(REFUSAL)) {
            heldKind = kind;
            held = data;
            return;
        }
        release();
        delivered = true;
        listener.output(kind, data);
    }

    /** Passes a held chunk on: it was the command's own output. */
    private void release() {
        if (held != null) {
            byte[] data = held;
            held = null;
            delivered = true;
            listener.output(heldKind, data);
        }
    }

    /** The guard's refusal: FAILED_PRECONDITION, with the generation the pod runs when the guard said it. */
    private DriverException refusedByGuard(byte[] refusal) {
        String text = new String(refusal, UTF_8).strip();
        int runs = text.indexOf(RUNS);
        String actual = runs < 0 ? "" : text.substring(runs + RUNS.length()).strip();
        return new DriverException(
                DriverErrorCode.FAILED_PRECONDITION,
                "the exec reached a pod of another execution than generation " + generation
                        + " (pod replaced under the same name); the command was not run",
                List.of(new dev.sandgate.spi.Mismatch(
                        dev.sandgate.spi.Mismatch.GENERATION, Long.toString(generation), actual)),
                null);
    }

    private void finish(byte[] statusJson) {
        Status status;
        try {
            status = client.getKubernetesSerialization().unmarshal(new String(statusJson, UTF_8), Status.class);
        } catch (RuntimeException e) {
            fail(new DriverException(
                    DriverErrorCode.UNAVAILABLE, "the exec stream sent an unreadable exit status; outcome unknown", e));
            return;
        }
        Integer exitCode = exitCode(status);
        if (held != null && exitCode != null && exitCode == REFUSED) {
            byte[] refusal = held;
            held = null;
            fail(refusedByGuard(refusal));
            return;
        }
        release();
        if (exitCode == null) {
            fail(new DriverException(
                    DriverErrorCode.UNAVAILABLE, "the command could not be run or followed: " + status.getMessage()));
            return;
        }
        if (ended.compareAndSet(false, true)) {
            listener.exited(exitCode);
            shutdown();
        }
    }

    /** The exit code a final Status carries: 0 on success, the ExitCode cause of NonZeroExitCode; else null. */
    static Integer exitCode(Status status) {
        if (status == null) {
            return null;
        }
        if ("Success".equals(status.getStatus())) {
            return 0;
        }
        if ("NonZeroExitCode".equals(status.getReason()) && status.getDetails() != null) {
            for (StatusCause cause : status.getDetails().getCauses()) {
                if ("ExitCode".equals(cause.getReason())) {
                    try {
                        return Integer.valueOf(cause.getMessage());
                    } catch (NumberFormatException e) {
                        return null;
                    }
                }
            }
        }
        return null;
    }

    private void fail(DriverException error) {
        if (!ended.get()) {
            release();
        }
        if (ended.compareAndSet(false, true)) {
            listener.failed(error);
            shutdown();
        }
    }

    private void shutdown() {
        WebSocket socket = webSocket;
        if (socket != null) {
            socket.sendClose(1000, "done");
        }
        delivery.shutdown();
    }

    // ---------------------------------------------------------------------------------------------------------------
    // ExecProcess

    @Override
    public void writeStdin(byte[] data) {
        requireNonNull(data, "data is null");
        if (!command.stdin()) {
            throw new IllegalStateException("the command was started without standard input");
        }
        if (stdinClosed.get()) {
            throw new IllegalStateException("standard input is closed");
        }
        send(STDIN, data);
    }

    @Override
    public void closeStdin() {
        if (command.stdin() && stdinClosed.compareAndSet(false, true)) {
            send(CLOSE, new byte[] {STDIN});
        }
    }

    @Override
    public void resize(TerminalSize size) {
        requireNonNull(size, "size is null");
        if (command.tty()) {
            String json = "{\"Width\":" + size.columns() + ",\"Height\":" + size.rows() + "}";
            send(RESIZE, json.getBytes(UTF_8));
        }
    }

    private void send(byte channel, byte[] data) {
        if (ended.get()) {
            return; // the command ended: nothing reads it any more
        }
        byte[] message = new byte[data.length + 1];
        message[0] = channel;
        System.arraycopy(data, 0, message, 1, data.length);
        if (!webSocket.send(ByteBuffer.wrap(message))) {
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "the exec stream is closed");
        }
    }

    /**
     * Ends the exec: the listener gets its final callback (failed: the outcome is unknown) unless it had it. Closing
     * the stream ends the command's standard input and output; the kubelet does not kill a command without a
     * terminal, which may keep running in the container until it ends by itself.
     */
    @Override
    public void close() {
        deliver(() -> fail(new DriverException(
                DriverErrorCode.ABORTED, "the exec was closed before the command ended; its outcome is unknown")));
        WebSocket socket = webSocket;
        if (socket != null) {
            socket.sendClose(1000, "closed by the caller");
        }
    }
}
