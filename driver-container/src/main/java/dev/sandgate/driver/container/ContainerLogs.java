package dev.sandgate.driver.container;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.command.LogContainerCmd;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.api.model.StreamType;
import dev.sandgate.driver.toolkit.ListenerGate;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.LogStream;
import dev.sandgate.spi.StreamKind;
import java.io.Closeable;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * One read of a container's output by its ID ({@link dev.sandgate.spi.ComputeDriver#logs}), standard output and
 * standard error kept apart as the engine's multiplexed stream marks them. The engine ends a followed read when the
 * container stops. docker-java delivers the frames on one thread of its own.
 */
final class ContainerLogs implements LogStream, ResultCallback<Frame> {
    private final LogListener listener;
    private final CountDownLatch answered = new CountDownLatch(1);
    private final ListenerGate gate = new ListenerGate();
    private volatile Closeable stream;
    private volatile Throwable refusal;

    private ContainerLogs(LogListener listener) {
        this.listener = listener;
    }

    /**
     * Starts reading the output of container {@code containerId} and returns once the engine has answered.
     *
     * @param client a client without a response timeout (a followed read may stay silent for long)
     * @throws DriverException with the engine's refusal (NOT_FOUND if the container is gone), or DEADLINE_EXCEEDED
     */
    static ContainerLogs start(
            DockerClient client, String containerId, LogQuery query, LogListener listener, Duration timeout) {
        var logs = new ContainerLogs(listener);
        LogContainerCmd command = client.logContainerCmd(containerId)
                .withStdOut(true)
                .withStdErr(true)
                .withTimestamps(false)
                .withFollowStream(query.follow());
        // The engines take whole seconds: output of the second that holds `since` is included.
        query.since().ifPresent(since -> command.withSince((int) since.getEpochSecond()));
        command.exec(logs);
        boolean inTime;
        try {
            inTime = logs.answered.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            logs.close();
            throw new DriverException(DriverErrorCode.UNAVAILABLE, "interrupted while starting to read logs", e);
        }
        if (!inTime) {
            logs.close();
            throw new DriverException(
                    DriverErrorCode.DEADLINE_EXCEEDED,
                    "the engine did not answer the logs request for container " + containerId + " within " + timeout);
        }
        Throwable refused = logs.refusal;
        if (refused != null) {
            throw refused instanceof RuntimeException runtime
                    ? EngineErrors.map(runtime, "reading the logs of container " + containerId)
                    : new DriverException(
                            DriverErrorCode.UNAVAILABLE,
                            "reading the logs of container " + containerId + ": " + refused.getMessage(),
                            refused);
        }
        return logs;
    }

    @Override
    public void onStart(Closeable closeable) {
        stream = closeable;
        answered.countDown();
        if (gate.closed()) {
            closeQuietly(closeable);
        }
    }

    @Override
    public void onNext(Frame frame) {
        byte[] payload = frame.getPayload();
        if (payload == null || payload.length == 0) {
            return;
        }
        StreamKind kind = frame.getStreamType() == StreamType.STDERR ? StreamKind.STDERR : StreamKind.STDOUT;
        gate.output(() -> listener.output(kind, payload));
    }

    @Override
    public void onError(Throwable failure) {
        if (answered.getCount() > 0) {
            refusal = failure;
            gate.finishSilently();
            answered.countDown();
            return;
        }
        if (gate.closed()) {
            return;
        }
        DriverException error = failure instanceof RuntimeException runtime
                ? EngineErrors.map(runtime, "reading logs")
                : new DriverException(DriverErrorCode.UNAVAILABLE, "reading logs: " + failure.getMessage(), failure);
        finish(() -> listener.failed(error));
    }

    @Override
    public void onComplete() {
        answered.countDown();
        if (!gate.closed()) {
            finish(listener::completed);
        }
    }

    private void finish(Runnable finalCallback) {
        gate.finish(finalCallback);
    }

    /** Stops the read; no callback follows. Idempotent. */
    @Override
    public void close() {
        gate.close();
        Closeable current = stream;
        if (current != null) {
            closeQuietly(current);
        }
    }

    private static void closeQuietly(Closeable closeable) {
        try {
            closeable.close();
        } catch (IOException | RuntimeException e) {
            // the stream is gone already
        }
    }
}
