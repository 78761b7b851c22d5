package dev.sandgate.cli;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.ExpiryAction;
import dev.sandgate.api.v1.ExpiryPolicy;
import dev.sandgate.api.v1.PolicyInput;
import dev.sandgate.api.v1.PolicyMode;
import dev.sandgate.api.v1.ResourceRequests;
import dev.sandgate.api.v1.SandboxSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(
        name = "create",
        description = "Creates a sandbox and launches its first execution (generation 1).",
        footer = {"", "Example: sandgate create -w demo -n hello --image busybox -- sleep 3600"})
final class CreateCommand extends MutatingCommand {
    @Option(
            names = {"-w", "--workspace"},
            required = true,
            paramLabel = "WORKSPACE",
            description = "The workspace to create the sandbox in.")
    String workspace;

    @Option(
            names = {"-n", "--name"},
            required = true,
            paramLabel = "NAME",
            description = "Unique within the workspace.")
    String name;

    @Option(
            names = "--image",
            required = true,
            paramLabel = "IMAGE",
            description = "The image to run, e.g. busybox or docker.io/library/python:3.12.")
    String image;

    @Option(
            names = "--command",
            paramLabel = "PART",
            description = "The entry point, one part per option (default: the image's).")
    List<String> command = new ArrayList<>();

    @Parameters(paramLabel = "ARG", description = "Arguments to the entry point (default: the image's).")
    List<String> args = new ArrayList<>();

    @Option(
            names = {"-e", "--env"},
            paramLabel = "KEY=VALUE",
            converter = KeyValues.Converter.class,
            description = "An environment variable (a secret: never shown again); repeat for more.")
    List<Map.Entry<String, String>> environment = new ArrayList<>();

    @Option(
            names = {"-l", "--label"},
            paramLabel = "KEY=VALUE",
            converter = KeyValues.Converter.class,
            description = "A label (keys under sandgate.dev/ are reserved); repeat for more.")
    List<Map.Entry<String, String>> labels = new ArrayList<>();

    @Option(
            names = "--memory",
            paramLabel = "SIZE",
            converter = Sizes.Converter.class,
            description = "Memory to reserve, e.g. 512Mi or 2G: a request, not a limit (the kubernetes driver schedules"
                    + " by it; docker, podman and vm ignore it). To limit memory, set static.memory_limit_bytes in"
                    + " the policy.")
    long memoryBytes;

    @Option(
            names = "--milli-cpus",
            paramLabel = "N",
            description =
                    "CPU to reserve, in thousandths of a core: a request, not a limit (as --memory). To limit CPU,"
                            + " set static.cpu_limit_millis in the policy.")
    long milliCpus;

    @ArgGroup(exclusive = true)
    PolicyDocumentOptions policy;

    @Option(
            names = "--policy-mode",
            paramLabel = "MODE",
            description = "LIVE (updates admitted) or FROZEN (the creation snapshot forever); default LIVE.")
    Mode policyMode;

    @Option(names = "--wait", description = "Wait until the driver reports the sandbox running (or failed).")
    boolean waitUntilReady;

    @Option(
            names = "--ttl",
            paramLabel = "DURATION",
            converter = Durations.Converter.class,
            description = "Each execution ends this long after it started, e.g. 10m (1s to 366 days).")
    java.time.Duration ttl;

    @Option(
            names = "--idle-timeout",
            paramLabel = "DURATION",
            converter = Durations.Converter.class,
            description = "Each execution ends when not renewed (sandgate renew) for this long, e.g. 5m.")
    java.time.Duration idleTimeout;

    @Option(
            names = "--expire-action",
            paramLabel = "ACTION",
            description = "What ends an expired execution: stop (the default; the workspace is kept) or delete.")
    ExpireAction expireAction;

    /** What an expiry does. */
    enum ExpireAction {
        stop,
        delete
    }

    /** The policy modes one can choose (the proto's enum also has UNSPECIFIED and UNRECOGNIZED). */
    enum Mode {
        LIVE,
        FROZEN
    }

    @Override
    void run(Session session) {
        Map<String, String> environment = KeyValues.toMap(this.environment, "--env", spec);
        Map<String, String> labels = KeyValues.toMap(this.labels, "--label", spec);
        PolicyInput.Builder policyInput = PolicyInput.newBuilder();
        if (policy != null) {
            policyInput.setDocument(policy.document());
        }
        if (policyMode != null) {
            policyInput.setMode(PolicyMode.valueOf(policyMode.name()));
        }
        CreateSandboxRequest.Builder request = CreateSandboxRequest.newBuilder()
                .setRequestId(requestId())
                .setWorkspace(workspace)
                .setName(name)
                .setSpec(SandboxSpec.newBuilder()
                        .setImage(image)
                        .addAllCommand(command)
                        .addAllArgs(args)
                        .putAllEnvironment(environment)
                        .setResources(ResourceRequests.newBuilder()
                                .setMemoryBytes(memoryBytes)
                                .setMilliCpus(milliCpus)))
                .putAllLabels(labels)
                .setWaitUntilReady(waitUntilReady);
        if (policy != null || policyMode != null) {
            request.setPolicy(policyInput);
        }
        if (ttl != null || idleTimeout != null) {
            ExpiryPolicy.Builder expiry = ExpiryPolicy.newBuilder()
                    .setAction(
                            expireAction == ExpireAction.delete
                                    ? ExpiryAction.EXPIRE_DELETE
                                    : ExpiryAction.EXPIRE_STOP);
            if (ttl != null) {
                expiry.setTtl(protoDuration(ttl));
            }
            if (idleTimeout != null) {
                expiry.setIdleTimeout(protoDuration(idleTimeout));
            }
            request.setExpiry(expiry);
        } else if (expireAction != null) {
            throw new picocli.CommandLine.ParameterException(
                    spec.commandLine(), "--expire-action needs --ttl or --idle-timeout");
        }
        if ((memoryBytes > 0 || milliCpus > 0) && policy == null) {
            session.printer()
                    .note("note: --memory and --milli-cpus are requests, not limits (only the kubernetes driver uses"
                            + " them); a policy's static.memory_limit_bytes and static.cpu_limit_millis limit a"
                            + " sandbox");
        }
        CreateSandboxResponse response = session.stub().createSandbox(request.build());
        if (session.printer().json()) {
            session.printer().json(response);
            return;
        }
        session.printer()
                .fields(new Printer.Fields()
                        .add("result", response.getReplayed() ? "created (replayed)" : "created")
                        .add("request", requestId())
                        .addAll(Printer.sandboxFields(response.hasSandbox(), response.getSandbox(), requestId())));
    }

    private static com.google.protobuf.Duration protoDuration(java.time.Duration d) {
        return com.google.protobuf.Duration.newBuilder()
                .setSeconds(d.getSeconds())
                .setNanos(d.getNano())
                .build();
    }

    /** The policy document, inline or from a file. */
    static final class PolicyDocumentOptions {
        @Option(names = "--policy", paramLabel = "JSON", description = "The policy document (docs/policy.md).")
        String inline;

        @Option(
                names = "--policy-file",
                paramLabel = "FILE",
                description = "Reads the policy document from FILE (- for stdin).")
        Path file;

        String document() {
            return inline != null ? inline : Documents.read(file);
        }
    }
}
