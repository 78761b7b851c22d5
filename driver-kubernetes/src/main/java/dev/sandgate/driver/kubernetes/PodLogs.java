package dev.sandgate.driver.kubernetes;

import static java.nio.charset.StandardCharsets.UTF_8;

import dev.sandgate.driver.kubernetes.ExecutionPods.PinnedPod;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.LogStream;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.StreamKind;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.HttpResponse;
import java.io.IOException;
import java.io.InputStream;
import java.net.URLEncoder;
import java.time.Duration;
import java.time.format.DateTimeFormatter;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

/**
 * One read of the API server's {@code pods/log} subresource for the sandbox's container of a pinned pod: {@code
 * previous=false} (only the current container's output; with {@code restartPolicy: Never} there is no other),
 * {@code follow} and {@code sinceTime} from the query. Kubernetes returns standard output and standard error
 * interleaved in one stream; it is delivered as {@link StreamKind#STDOUT}.
 *
 * <p>The response is opened first; its body is read (on a virtual thread) only after {@link #admit()}, once the
 * driver confirmed that the read reached the pinned pod.
 */
final class PodLogs implements LogStream, ExecutionPods.HeldStream {
    private static final int CHUNK = 8192;

    private final LogListener listener;
    private final HttpResponse<InputStream> response;
    private final AtomicBoolean ended = new AtomicBoolean();
    private final boolean follow;
    private final BooleanSupplier stillRuns;

    private PodLogs(
            LogListener listener, HttpResponse<InputStream> response, boolean follow, BooleanSupplier stillRuns) {
        this.listener = listener;
        this.response = response;
        this.follow = follow;
        this.stillRuns = stillRuns;
    }

    /** Opens the read: FAILED_PRECONDITION when the API server no longer finds the pod or its container. */
    static PodLogs open(
            KubernetesClient client,
            PinnedPod pod,
            LogQuery query,
            LogListener listener,
            Duration timeout,
            BooleanSupplier stillRuns) {
        StringBuilder url = new StringBuilder(client.getMasterUrl().toString().replaceAll("/+$", ""))
                .append("/api/v1/namespaces/")
                .append(encode(pod.namespace()))
                .append("/pods/")
                .append(encode(pod.name()))
                .append("/log?container=")
                .append(encode(ExecutionPods.CONTAINER))
                .append("&previous=false&follow=")
                .append(query.follow());
        query.since()
                .ifPresent(
                        since -> url.append("&sinceTime=").append(encode(DateTimeFormatter.ISO_INSTANT.format(since))));
        HttpRequest request = client.getHttpClient()
                .newHttpRequestBuilder()
                .uri(url.toString())
                .forStreaming()
                .build();
        HttpResponse<InputStream> response;
        try {
            response = client.getHttpClient()
                    .sendAsync(request, InputStream.class)
                    .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "interrupted while opening the log read", e);
        } catch (TimeoutException e) {
            throw new DriverException(
                    DriverErrorCode.DEADLINE_EXCEEDED,
                    "the log read of pod " + pod.namespace() + "/" + pod.name() + " did not open within " + timeout,
                    e);
        } catch (ExecutionException e) {
            throw new DriverException(
                    DriverErrorCode.UNAVAILABLE,
                    "cannot read the log of pod " + pod.namespace() + "/" + pod.name() + ": " + e.getCause(),
                    e.getCause());
        }
        if (!response.isSuccessful()) {
            String body = drain(response);
            String reason = "the Kubernetes API refused to read the log of pod " + pod.namespace() + "/" + pod.name()
                    + " (HTTP " + response.code() + ")" + (body.isBlank() ? "" : ": " + body);
            throw switch (response.code()) {
                case 400, 404 ->
                    new DriverException(
                            DriverErrorCode.FAILED_PRECONDITION,
                            reason,
                            List.of(new Mismatch("running", "true", "false")),
                            null);
                case 401, 403 ->
                    new DriverException(
                            DriverErrorCode.UNAVAILABLE,
                            reason + " (check the gateway's RBAC for pods/log: docs/drivers/kubernetes.md)");
                default -> new DriverException(DriverErrorCode.UNAVAILABLE, reason);
            };
        }
        return new PodLogs(listener, response, query.follow(), stillRuns);
    }

    private static String encode(String value) {
        return URLEncoder.encode(value, UTF_8).replace("+", "%20");
    }

    private static String drain(HttpResponse<InputStream> response) {
        try (InputStream body = response.body()) {
            return body == null ? "" : new String(body.readNBytes(4096), UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    /** Starts delivering the output: the read is known to have reached the pinned pod. */
    @Override
    public void admit() {
        Thread.ofVirtual().name("kubernetes-log-read").start(this::pump);
    }

    /** Closes the response without a single callback: the read is refused after all. */
    @Override
    public void abandon() {
        ended.set(true);
        closeBody();
    }

    private void pump() {
        byte[] buffer = new byte[CHUNK];
        try (InputStream body = response.body()) {
            int read;
            while ((read = body.read(buffer)) >= 0) {
                if (ended.get()) {
                    return;
                }
                if (read > 0) {
                    listener.output(StreamKind.STDOUT, Arrays.copyOf(buffer, read));
                }
            }
            if (follow && !ended.get() && stillRuns.getAsBoolean()) {
                // the API server or kubelet dropped the stream (a restart, a log rotation): not the end
                fail("the followed log ended while the execution still runs; read it again", null);
                return;
            }
            if (ended.compareAndSet(false, true)) {
                listener.completed();
            }
        } catch (IOException | RuntimeException e) {
            fail("the log read failed: " + e.getMessage(), e);
        }
    }

    private void fail(String message, Throwable cause) {
        if (ended.compareAndSet(false, true)) {
            listener.failed(new DriverException(DriverErrorCode.UNAVAILABLE, message, cause));
        }
    }

    /** Stops the read; no callback follows. */
    @Override
    public void close() {
        if (ended.compareAndSet(false, true)) {
            closeBody();
        }
    }

    private void closeBody() {
        try {
            InputStream body = response.body();
            if (body != null) {
                body.close();
            }
        } catch (IOException e) {
            // closing: nothing to report
        }
    }
}
