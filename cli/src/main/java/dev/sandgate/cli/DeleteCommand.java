package dev.sandgate.cli;

import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxResponse;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "delete",
        description = "Removes a sandbox and its workspace; conditional with --expect-token/--expect-id.")
final class DeleteCommand extends MutatingCommand {
    @Mixin
    TargetOptions target;

    @Mixin
    PreconditionOptions precondition;

    @Option(names = "--missing-ok", description = "Succeed (\"nothing deleted\") when the sandbox does not exist.")
    boolean missingOk;

    @Override
    void run(Session session) {
        DeleteSandboxRequest.Builder request = DeleteSandboxRequest.newBuilder()
                .setRequestId(requestId())
                .setTarget(target.target())
                .setAllowMissing(missingOk);
        precondition.precondition().ifPresent(request::setPrecondition);
        DeleteSandboxResponse response = session.stub().deleteSandbox(request.build());
        if (session.printer().json()) {
            session.printer().json(response);
            return;
        }
        Printer.Fields fields = new Printer.Fields()
                .add("result", response.getOutcome().name() + (response.getReplayed() ? " (replayed)" : ""))
                .add("id", response.getSandboxId());
        if (!response.getSandboxId().isEmpty()) {
            fields.add("generation", Long.toString(response.getGeneration()));
        }
        session.printer().fields(fields.add("request", requestId()));
    }
}
