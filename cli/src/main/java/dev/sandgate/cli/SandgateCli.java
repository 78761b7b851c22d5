package dev.sandgate.cli;

import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;

/**
 * The {@code sandgate} command-line client of {@code sandgate.v1.SandboxService}.
 *
 * <p>Exit status: 0 on success, 1 when the gateway answered with an error (printed with its gRPC code, reason and
 * field), 2 for a usage error.
 */
@Command(
        name = "sandgate",
        mixinStandardHelpOptions = true,
        versionProvider = SandgateCli.Version.class,
        description = "Drives sandboxes through a Sandgate gateway.",
        subcommands = {
            CreateCommand.class,
            GetCommand.class,
            ListCommand.class,
            StopCommand.class,
            StartCommand.class,
            DeleteCommand.class,
            WatchCommand.class,
            PolicyCommand.class,
            OperationCommand.class
        })
public final class SandgateCli implements Runnable {
    /** The gateway's default listen address. */
    public static final String DEFAULT_TARGET = "127.0.0.1:7443";

    static final int EXIT_OK = 0;
    static final int EXIT_RPC_ERROR = 1;
    static final int EXIT_USAGE = 2;

    @Option(
            names = "--target",
            scope = ScopeType.INHERIT,
            paramLabel = "HOST:PORT",
            defaultValue = "${env:SANDGATE_TARGET:-" + DEFAULT_TARGET + "}",
            description = "The gateway's address (env SANDGATE_TARGET; default ${DEFAULT-VALUE}).")
    String target;

    @Option(
            names = "--json",
            scope = ScopeType.INHERIT,
            description = "Print responses (and errors, on stderr) as protobuf JSON instead of tables.")
    boolean json;

    @Option(
            names = "--timeout",
            scope = ScopeType.INHERIT,
            paramLabel = "DURATION",
            defaultValue = "30s",
            converter = Durations.Converter.class,
            description = "Deadline of each call, e.g. 500ms, 30s, 2m (default ${DEFAULT-VALUE}; watch has none).")
    Duration timeout;

    private final Function<String, ManagedChannel> channels;
    private final PrintWriter out;
    private final PrintWriter err;

    SandgateCli(Function<String, ManagedChannel> channels, PrintWriter out, PrintWriter err) {
        this.channels = channels;
        this.out = out;
        this.err = err;
    }

    public static void main(String[] args) {
        PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
        PrintWriter err = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
        System.exit(run(args, SandgateCli::plaintextChannel, out, err));
    }

    /** Runs one command line and returns its exit status. {@code channels} opens a channel to a target. */
    static int run(String[] args, Function<String, ManagedChannel> channels, PrintWriter out, PrintWriter err) {
        SandgateCli cli = new SandgateCli(channels, out, err);
        CommandLine commandLine = new CommandLine(cli)
                .setOut(out)
                .setErr(err)
                .setCaseInsensitiveEnumValuesAllowed(true)
                .setExecutionExceptionHandler((exception, line, parseResult) -> cli.report(exception));
        int status = commandLine.execute(args);
        out.flush();
        err.flush();
        return status;
    }

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "a command is required");
    }

    /** Opens a channel to the configured target, runs {@code call} with a session on it, and closes the channel. */
    int withSession(SessionCall call) throws Exception {
        ManagedChannel channel = channels.apply(target);
        try {
            call.run(new Session(channel, timeout, new Printer(out, json)));
            return EXIT_OK;
        } finally {
            channel.shutdownNow();
            channel.awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    private int report(Exception exception) throws Exception {
        if (exception instanceof StatusRuntimeException rpcError) {
            err.print(json ? RpcErrors.json(rpcError) : RpcErrors.describe(rpcError, target));
            err.flush();
            return EXIT_RPC_ERROR;
        }
        if (exception instanceof UncheckedIOException unreadable) {
            err.println("error: " + unreadable.getMessage());
            err.flush();
            return EXIT_USAGE;
        }
        throw exception;
    }

    private static ManagedChannel plaintextChannel(String target) {
        return Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
                .build();
    }

    @FunctionalInterface
    interface SessionCall {
        void run(Session session) throws Exception;
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String version = SandgateCli.class.getPackage().getImplementationVersion();
            return new String[] {"sandgate " + (version == null ? "(development build)" : version)};
        }
    }
}
