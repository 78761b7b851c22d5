package dev.sandgate.gateway.grpc;

import static java.util.Objects.requireNonNull;

import dev.sandgate.api.v1.ExecResult;
import dev.sandgate.api.v1.ExecSandboxRequest;
import dev.sandgate.api.v1.ExecSandboxResponse;
import dev.sandgate.api.v1.ExecStarted;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.lifecycle.Execs;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.StreamKind;
import dev.sandgate.spi.TerminalSize;
import io.grpc.Context;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * One {@code ExecSandbox} stream. The first request must carry ExecStart, and only the first; it is validated here,
 * then started by {@link Execs} on a call thread (it reads the store and calls the driver). Later requests carry stdin
 * (only with {@code start.stdin}), its end, or a terminal size (only with {@code start.tty}); each is handed to the
 * driver's process on a call thread, and the next is read only after it was, so a client cannot outrun the command's
 * standard input. Output goes out as the client reads it ({@link StreamSender}). The client's half-close does not end
 * the command; its cancellation (or a deadline) does, by closing the process. No thread is held while nothing
 * happens.
 */
final class ExecCall implements StreamObserver<ExecSandboxRequest> {
    private final Execs execs;
    private final ServerCallStreamObserver<ExecSandboxResponse> out;
    private final Executor executor;
    private final StreamSender<ExecSandboxResponse> sender;
    // Set by the transport's thread (one request at a time) or a call thread that the transport waits for.
    private volatile Execs.Exec exec;
    private volatile ExecProcess process;
    private volatile boolean stdinClosed;

    private ExecCall(Execs execs, ServerCallStreamObserver<ExecSandboxResponse> out, Executor executor) {
        this.execs = execs;
        this.out = out;
        this.executor = executor;
        this.sender = new StreamSender<>(out, this::closeProcess);
    }

    /** Serves one call: reads requests one at a time (manual flow control) and answers on {@code out}. */
    static StreamObserver<ExecSandboxRequest> open(
            Execs execs, StreamObserver<ExecSandboxResponse> out, Executor executor) {
        var serverOut = (ServerCallStreamObserver<ExecSandboxResponse>) requireNonNull(out, "out is null");
        ExecCall call = new ExecCall(
                requireNonNull(execs, "execs is null"), serverOut, requireNonNull(executor, "executor is null"));
        serverOut.disableAutoRequest();
        serverOut.request(1);
        return call;
    }

    @Override
    public void onNext(ExecSandboxRequest request) {
        if (sender.finished()) {
            return;
        }
        try {
            if (exec == null) {
                begin(request);
            } else {
                forward(request);
            }
        } catch (RuntimeException e) {
            fail(e);
        }
    }

    private void begin(ExecSandboxRequest request) {
        if (!request.hasStart()) {
            throw GatewayException.invalidField("start", "the first message must carry ExecStart");
        }
        Execs.Exec parsed = ExecMapper.exec(request.getStart());
        exec = parsed;
        run(() -> {
            sender.opening();
            started(execs.exec(parsed, Listener::new));
        });
    }

    private void started(Execs.Started started) {
        ExecStarted.Builder header =
                ExecStarted.newBuilder().setSandboxId(started.sandboxId()).setGeneration(started.generation());
        switch (started) {
            case Execs.Replayed replayed -> {
                sender.open(ExecSandboxResponse.newBuilder()
                        .setStarted(header.setReplayed(true))
                        .build());
                sender.send(exited(replayed.sandboxId(), replayed.generation(), replayed.exitCode()));
                sender.complete();
            }
            case Execs.Running running -> {
                process = running.process();
                if (sender.finished()) {
                    // cancelled while the driver started it
                    closeProcess();
                    return;
                }
                sender.open(ExecSandboxResponse.newBuilder().setStarted(header).build());
                out.request(1);
            }
        }
    }

    private void forward(ExecSandboxRequest request) {
        ExecProcess running = process;
        switch (request.getPayloadCase()) {
            case START -> throw GatewayException.invalidField("start", "only the first message may carry ExecStart");
            case STDIN -> {
                if (!exec.command().stdin()) {
                    throw GatewayException.invalidField("stdin", "is only allowed with start.stdin");
                }
                if (stdinClosed) {
                    throw GatewayException.invalidField("stdin", "was closed by close_stdin");
                }
                byte[] data = request.getStdin().toByteArray();
                run(() -> {
                    running.writeStdin(data);
                    out.request(1);
                });
            }
            case CLOSE_STDIN -> {
                stdinClosed = true;
                run(() -> {
                    running.closeStdin();
                    out.request(1);
                });
            }
            case RESIZE -> {
                if (!exec.command().tty()) {
                    throw GatewayException.invalidField("resize", "is only allowed with start.tty");
                }
                TerminalSize size = ExecMapper.terminalSize("resize", request.getResize());
                run(() -> {
                    running.resize(size);
                    out.request(1);
                });
            }
            case PAYLOAD_NOT_SET -> throw GatewayException.invalidField("payload", "is empty");
        }
    }

    /** Runs {@code work} on a call thread with the call's context; a failure ends the call. */
    private void run(Runnable work) {
        Runnable guarded = Context.current().wrap(() -> {
            try {
                work.run();
            } catch (RuntimeException e) {
                fail(e);
            }
        });
        try {
            executor.execute(guarded);
        } catch (RejectedExecutionException e) {
            fail(new GatewayException(ErrorReason.GATEWAY_SHUTTING_DOWN, "the gateway is shutting down"));
        }
    }

    @Override
    public void onError(Throwable t) {
        // the client cancelled: the cancel handler closes the process
        closeProcess();
    }

    @Override
    public void onCompleted() {
        // The client sends nothing more; the command goes on (its standard input stays as the client left it).
    }

    private void fail(Throwable failure) {
        sender.fail(failure);
        closeProcess();
    }

    private void closeProcess() {
        ExecProcess running = process;
        if (running != null) {
            running.close();
        }
    }

    private static ExecSandboxResponse exited(String sandboxId, long generation, int exitCode) {
        return ExecSandboxResponse.newBuilder()
                .setExited(ExecResult.newBuilder()
                        .setSandboxId(sandboxId)
                        .setGeneration(generation)
                        .setExitCode(exitCode))
                .build();
    }

    /** The driver's callbacks: output and the end, in order, from one thread at a time. */
    private final class Listener implements ExecListener {
        private final Execs.Pinned pinned;

        Listener(Execs.Pinned pinned) {
            this.pinned = pinned;
        }

        @Override
        public void output(StreamKind stream, byte[] data) {
            com.google.protobuf.ByteString bytes = com.google.protobuf.ByteString.copyFrom(data);
            sender.send(
                    switch (stream) {
                        case STDOUT ->
                            ExecSandboxResponse.newBuilder().setStdout(bytes).build();
                        case STDERR ->
                            ExecSandboxResponse.newBuilder().setStderr(bytes).build();
                    });
        }

        @Override
        public void exited(int exitCode) {
            sender.send(ExecCall.exited(pinned.sandboxId(), pinned.generation(), exitCode));
            sender.complete();
        }

        @Override
        public void failed(DriverException error) {
            sender.fail(GatewayException.fromPinnedCall(error));
        }
    }
}
