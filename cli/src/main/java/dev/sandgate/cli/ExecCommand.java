package dev.sandgate.cli;

import com.google.protobuf.ByteString;
import dev.sandgate.api.v1.ExecSandboxRequest;
import dev.sandgate.api.v1.ExecSandboxResponse;
import dev.sandgate.api.v1.ExecStart;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.TerminalSize;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(
        name = "exec",
        description = "Runs a command in the sandbox's current (or the --token) execution; exits with its exit code.")
final class ExecCommand extends MutatingCommand {
    @Mixin
    TargetOptions target;

    @Mixin
    ExecutionOptions execution;

    @Option(
            names = "--tty",
            description = "Allocate a terminal (output arrives merged), sized by COLUMNS and LINES when both are set.")
    boolean tty;

    @Option(
            names = {"-i", "--stdin"},
            description = "Send this terminal's standard input to the command.")
    boolean stdin;

    @Parameters(paramLabel = "CMD", arity = "1..*", description = "The program and its arguments (after --).")
    List<String> command;

    @Override
    void run(Session session) throws Exception {
        String token = execution.token(session, target.target());
        ExecStart.Builder start = ExecStart.newBuilder()
                .setRequestId(requestId())
                .setTarget(target.target())
                .setExecutionToken(token)
                .addAllCommand(command)
                .setTty(tty)
                .setStdin(stdin);
        if (tty) {
            terminalSize(System.getenv()).ifPresent(start::setTerminalSize);
        }
        CompletableFuture<Integer> exit = new CompletableFuture<>();
        StreamObserver<ExecSandboxRequest> requests = asyncStub(session).execSandbox(new StreamObserver<>() {
            @Override
            public void onNext(ExecSandboxResponse response) {
                switch (response.getPayloadCase()) {
                    case STDOUT -> write(session.printer(), response.getStdout(), false);
                    case STDERR -> write(session.printer(), response.getStderr(), true);
                    case EXITED -> exit.complete(response.getExited().getExitCode());
                    case STARTED, PAYLOAD_NOT_SET -> {}
                }
            }

            @Override
            public void onError(Throwable t) {
                exit.completeExceptionally(t);
            }

            @Override
            public void onCompleted() {
                exit.complete(exit.getNow(0));
            }
        });
        requests.onNext(ExecSandboxRequest.newBuilder().setStart(start).build());
        if (stdin) {
            Thread pump = new Thread(() -> pump(System.in, requests), "sandgate-stdin");
            pump.setDaemon(true);
            pump.start();
        }
        try {
            exitStatus = exit.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof StatusRuntimeException status) {
                throw status;
            }
            throw e;
        }
    }

    /**
     * The terminal's size as the shell exports it ({@code COLUMNS} and {@code LINES}), if both are whole numbers from 1
     * to 65535; otherwise none (the gateway's driver picks its default).
     */
    static Optional<TerminalSize> terminalSize(Map<String, String> environment) {
        Optional<Integer> columns = dimension(environment.get("COLUMNS"));
        Optional<Integer> rows = dimension(environment.get("LINES"));
        if (columns.isEmpty() || rows.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(TerminalSize.newBuilder()
                .setColumns(columns.get())
                .setRows(rows.get())
                .build());
    }

    private static Optional<Integer> dimension(String value) {
        if (value == null || !value.strip().matches("[0-9]{1,5}")) {
            return Optional.empty();
        }
        int n = Integer.parseInt(value.strip());
        return n >= 1 && n <= 65535 ? Optional.of(n) : Optional.empty();
    }

    private static void pump(InputStream in, StreamObserver<ExecSandboxRequest> requests) {
        byte[] buffer = new byte[16 * 1024];
        try {
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                if (n > 0) {
                    synchronized (requests) {
                        requests.onNext(ExecSandboxRequest.newBuilder()
                                .setStdin(ByteString.copyFrom(buffer, 0, n))
                                .build());
                    }
                }
            }
            synchronized (requests) {
                requests.onNext(
                        ExecSandboxRequest.newBuilder().setCloseStdin(true).build());
            }
        } catch (IOException | RuntimeException e) {
            // the call ended, or the terminal went away: the command's standard input stays as it is
        }
    }

    private static void write(Printer printer, ByteString data, boolean error) {
        printer.raw(data.toString(StandardCharsets.UTF_8), error);
    }

    static SandboxServiceGrpc.SandboxServiceStub asyncStub(Session session) {
        SandboxServiceGrpc.SandboxServiceStub stub = SandboxServiceGrpc.newStub(session.channel());
        if (session.token().isEmpty()) {
            return stub;
        }
        Metadata headers = new Metadata();
        headers.put(
                Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER),
                "Bearer " + session.token().get());
        return stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
    }
}
