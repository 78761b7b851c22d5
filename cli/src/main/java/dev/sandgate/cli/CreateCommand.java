package dev.sandgate.cli;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.PolicyInput;
import dev.sandgate.api.v1.PolicyMode;
import dev.sandgate.api.v1.ResourceRequests;
import dev.sandgate.api.v1.SandboxSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(
        name = "create",
        description = "Creates a sandbox and launches its first execution (generation 1).",
        footer = {"", "Example: sandgate create -w demo -n hello --image busybox -- sleep 3600"})
final class CreateCommand extends SandgateCommand {
    @Option(
            names = {"-w", "--workspace"},
            required = true,
            paramLabel = "WORKSPACE")
    String workspace;

    @Option(
            names = {"-n", "--name"},
            required = true,
            paramLabel = "NAME",
            description = "Unique within the workspace.")
    String name;

    @Option(names = "--image", required = true, paramLabel = "IMAGE")
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
            description = "An environment variable (a secret: never shown again).")
    Map<String, String> environment = new LinkedHashMap<>();

    @Option(
            names = {"-l", "--label"},
            paramLabel = "KEY=VALUE")
    Map<String, String> labels = new LinkedHashMap<>();

    @Option(
            names = "--memory",
            paramLabel = "SIZE",
            converter = Sizes.Converter.class,
            description = "Requested memory, e.g. 512Mi or 2G.")
    long memoryBytes;

    @Option(names = "--milli-cpus", paramLabel = "N", description = "Requested CPU in thousandths of a core.")
    long milliCpus;

    @ArgGroup(exclusive = true)
    PolicyDocumentOptions policy;

    @Option(
            names = "--policy-mode",
            paramLabel = "MODE",
            description = "LIVE (updates admitted) or FROZEN (the creation snapshot forever); default LIVE.")
    PolicyMode policyMode;

    @Option(names = "--wait", description = "Wait until the driver reports the sandbox running (or failed).")
    boolean waitUntilReady;

    @Mixin
    RequestIdOption requestId;

    @Override
    void run(Session session) {
        PolicyInput.Builder policyInput = PolicyInput.newBuilder();
        if (policy != null) {
            policyInput.setDocument(policy.document());
        }
        if (policyMode != null) {
            policyInput.setMode(policyMode);
        }
        CreateSandboxRequest.Builder request = CreateSandboxRequest.newBuilder()
                .setRequestId(requestId.requestId())
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
        CreateSandboxResponse response = session.stub().createSandbox(request.build());
        if (session.printer().json()) {
            session.printer().json(response);
            return;
        }
        session.printer()
                .fields(new Printer.Fields()
                        .add("result", response.getReplayed() ? "created (replayed)" : "created")
                        .add("request", requestId.requestId())
                        .addAll(Printer.sandboxFields(response.getSandbox())));
    }

    /** The policy document, inline or from a file. */
    static final class PolicyDocumentOptions {
        @Option(names = "--policy", paramLabel = "JSON", description = "The policy document (docs/policy.md).")
        String inline;

        @Option(names = "--policy-file", paramLabel = "FILE", description = "Reads the policy document from FILE.")
        Path file;

        String document() {
            return inline != null ? inline : Documents.read(file);
        }
    }
}
