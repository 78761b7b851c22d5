package dev.sandgate.cli;

import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
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
        // Inherited: every subcommand has -h/--help (and -V/--version).
        scope = ScopeType.INHERIT,
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
            OperationCommand.class,
            RenewCommand.class,
            ExecCommand.class,
            LogsCommand.class,
            CommandLine.HelpCommand.class
        })
public final class SandgateCli implements Runnable {
    /** The gateway's default listen address. */
    public static final String DEFAULT_TARGET = "127.0.0.1:7443";

    static final int EXIT_OK = 0;
    static final int EXIT_RPC_ERROR = 1;
    static final int EXIT_USAGE = 2;

    /**
     * gRPC logs through java.util.logging, e.g. a WARNING with a stack trace when a name does not resolve; the CLI
     * reports such failures itself. Held here because the logging framework keeps loggers only weakly.
     */
    private static final Logger GRPC_LOGGER = Logger.getLogger("io.grpc");

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
            description = "Print responses (and errors, on stderr) as protobuf JSON instead of tables; the request id"
                    + " of a mutating call goes to stderr.")
    boolean json;

    @Option(
            names = "--timeout",
            scope = ScopeType.INHERIT,
            paramLabel = "DURATION",
            defaultValue = "30s",
            converter = Durations.Converter.class,
            description = "Deadline of each call, e.g. 500ms, 30s, 2m (default ${DEFAULT-VALUE}; watch has none).")
    Duration timeout;

    @Mixin
    ClientSecurity security = new ClientSecurity();

    private final Function<String, ManagedChannel> channels;
    private final PrintWriter out;
    private final PrintWriter err;

    /** The request_id of the mutating call under way, for its error report; null for a read. */
    private String requestId;

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
        GRPC_LOGGER.setLevel(Level.SEVERE);
        SandgateCli cli = new SandgateCli(channels, out, err);
        CommandLine commandLine = new CommandLine(cli)
                .setOut(out)
                .setErr(err)
                .setCaseInsensitiveEnumValuesAllowed(true)
                .setParameterExceptionHandler(SandgateCli::usageError)
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
        throw new ParameterException(
                spec.commandLine(),
                "a command is required: " + String.join(", ", spec.subcommands().keySet()));
    }

    /**
     * Opens a channel to the configured target, runs {@code call} with a session on it, and closes the channel. A
     * mutating call passes its {@code requestId}: its error report shows it, and so does stderr after a success with
     * {@code --json} (where stdout holds only the response).
     */
    int withSession(SessionCall call, String requestId) throws Exception {
        this.requestId = requestId;
        String address;
        try {
            address = Targets.parse(target);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        ManagedChannel channel;
        Optional<String> token;
        try {
            token = security.token(System.getenv());
            channel = security.tls() ? security.channel(address) : channels.apply(address);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        try {
            call.run(new Session(channel, timeout, new Printer(out, err, json), token));
            if (json && requestId != null) {
                err.println("request id: " + requestId);
                err.flush();
            }
            return EXIT_OK;
        } finally {
            channel.shutdownNow();
            channel.awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    private int report(Exception exception) throws Exception {
        if (exception instanceof StatusRuntimeException rpcError) {
            err.print(
                    json
                            ? RpcErrors.json(rpcError, Targets.parse(target), requestId)
                            : RpcErrors.describe(rpcError, Targets.parse(target), requestId));
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

    /**
     * A usage error: the error, picocli's suggestions for a misspelt option or command, and where the usage is, not
     * the whole usage (which buried the error).
     */
    private static int usageError(ParameterException error, String[] args) {
        CommandLine command = error.getCommandLine();
        PrintWriter err = command.getErr();
        err.println(error.getMessage());
        CommandLine.UnmatchedArgumentException.printSuggestions(error, err);
        err.println("Run '" + command.getCommandSpec().qualifiedName() + " --help' for its usage.");
        err.flush();
        return EXIT_USAGE;
    }

    static ManagedChannel plaintextChannel(String target) {
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
