package dev.sandgate.cli;

import dev.sandgate.api.v1.GetSandboxPolicyRequest;
import dev.sandgate.api.v1.GetSandboxPolicyResponse;
import dev.sandgate.api.v1.UpdateSandboxPolicyRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyResponse;
import java.nio.file.Path;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

@Command(
        name = "policy",
        description = "Shows or updates a sandbox's policy.",
        subcommands = {PolicyCommand.Get.class, PolicyCommand.Update.class})
final class PolicyCommand implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "a command is required: get or update");
    }

    @Command(name = "get", description = "The admitted policy revision and the one bound to the current execution.")
    static final class Get extends SandgateCommand {
        @Mixin
        TargetOptions target;

        @Override
        void run(Session session) {
            GetSandboxPolicyResponse response = session.stub()
                    .getSandboxPolicy(GetSandboxPolicyRequest.newBuilder()
                            .setTarget(target.target())
                            .build());
            if (session.printer().json()) {
                session.printer().json(response);
                return;
            }
            session.printer()
                    .fields(new Printer.Fields()
                            .add("id", response.getSandboxId())
                            .add("mode", response.getMode().name())
                            .add("admitted", Printer.revision(response.getAdmitted()))
                            .add("current launch", Printer.revision(response.getCurrentLaunch()))
                            .add("launch", Printer.launch(response.getLaunchInput())));
            session.printer().line("");
            session.printer().line(response.getAdmitted().getCanonicalDocument());
        }
    }

    @Command(
            name = "update",
            description = "Admits a new revision (LIVE sandboxes; static changes only while stopped).")
    static final class Update extends MutatingCommand {
        @Mixin
        TargetOptions target;

        @ArgGroup(exclusive = true, multiplicity = "1")
        DocumentOptions document;

        @Option(
                names = "--expect-revision",
                paramLabel = "N",
                description = "Apply only if the admitted revision is still N (else ABORTED REVISION_MISMATCH).")
        long expectedRevision;

        @Override
        void run(Session session) {
            UpdateSandboxPolicyResponse response = session.stub()
                    .updateSandboxPolicy(UpdateSandboxPolicyRequest.newBuilder()
                            .setRequestId(requestId())
                            .setTarget(target.target())
                            .setDocument(document.document())
                            .setExpectedRevision(expectedRevision)
                            .build());
            if (session.printer().json()) {
                session.printer().json(response);
                return;
            }
            String result = response.getChanged() ? "admitted" : "unchanged (canonically equal to the admitted one)";
            session.printer()
                    .fields(new Printer.Fields()
                            .add("result", result + (response.getReplayed() ? " (replayed)" : ""))
                            .add("revision", Printer.revision(response.getAdmitted()))
                            .add("request", requestId())
                            .addAll(Printer.sandboxFields(response.hasSandbox(), response.getSandbox(), requestId())));
        }
    }

    /** The new document, inline or from a file. */
    static final class DocumentOptions {
        @Option(
                names = {"--document", "--policy"},
                paramLabel = "JSON",
                description = "The policy document (docs/policy.md); --policy as with create.")
        String inline;

        @Option(
                names = {"--file", "--policy-file"},
                paramLabel = "FILE",
                description = "Reads the document from FILE (- for stdin); --policy-file as with create.")
        Path file;

        String document() {
            return inline != null ? inline : Documents.read(file);
        }
    }
}
