package dev.sandgate.gateway.grpc;

import static java.util.Objects.requireNonNull;

import com.google.protobuf.ByteString;
import dev.sandgate.api.v1.LogStream;
import dev.sandgate.api.v1.StreamSandboxLogsRequest;
import dev.sandgate.api.v1.StreamSandboxLogsResponse;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.lifecycle.Execs;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.StreamKind;
import io.grpc.Context;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * One {@code StreamSandboxLogs} stream: validated here, started by {@link Execs} on a call thread, then fed by the
 * driver's thread as the client reads ({@link StreamSender}). The client's cancellation (or a deadline) closes the
 * driver's read.
 */
final class LogsCall {
    private final StreamSender<StreamSandboxLogsResponse> sender;
    private volatile dev.sandgate.spi.LogStream stream;

    private LogsCall(ServerCallStreamObserver<StreamSandboxLogsResponse> out) {
        this.sender = new StreamSender<>(out, this::closeStream);
    }

    /** Serves one call on {@code out}. */
    static void serve(
            Execs execs,
            StreamSandboxLogsRequest request,
            StreamObserver<StreamSandboxLogsResponse> out,
            Executor executor) {
        LogsCall call =
                new LogsCall((ServerCallStreamObserver<StreamSandboxLogsResponse>) requireNonNull(out, "out is null"));
        Execs.Logs logs;
        try {
            logs = ExecMapper.logs(request);
        } catch (RuntimeException e) {
            call.sender.fail(e);
            return;
        }
        Runnable start = Context.current().wrap(() -> {
            try {
                call.sender.opening();
                call.stream = execs.logs(logs, call.new Listener()).stream();
                if (call.sender.finished()) {
                    call.closeStream();
                    return;
                }
                // Nothing comes first: output flows as the driver delivers it.
                call.sender.open(null);
            } catch (RuntimeException e) {
                call.sender.fail(e);
            }
        });
        try {
            executor.execute(start);
        } catch (RejectedExecutionException e) {
            call.sender.fail(new GatewayException(ErrorReason.GATEWAY_SHUTTING_DOWN, "the gateway is shutting down"));
        }
    }

    private void closeStream() {
        dev.sandgate.spi.LogStream open = stream;
        if (open != null) {
            open.close();
        }
    }

    private final class Listener implements LogListener {
        @Override
        public void output(StreamKind kind, byte[] data) {
            sender.send(StreamSandboxLogsResponse.newBuilder()
                    .setStream(
                            switch (kind) {
                                case STDOUT -> LogStream.STDOUT;
                                case STDERR -> LogStream.STDERR;
                            })
                    .setData(ByteString.copyFrom(data))
                    .build());
        }

        @Override
        public void completed() {
            sender.complete();
        }

        @Override
        public void failed(DriverException error) {
            sender.fail(GatewayException.fromPinnedCall(error));
        }
    }
}
