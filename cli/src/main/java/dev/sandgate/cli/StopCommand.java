package dev.sandgate.cli;

import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.StopSandboxResponse;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

@Command(
        name = "stop",
        description =
                "Stops the current execution (the workspace is kept); conditional with --expect-token/--expect-id.")
final class StopCommand extends MutatingCommand {
    @Mixin
    TargetOptions target;

    @Mixin
    PreconditionOptions precondition;

    @Override
    void run(Session session) {
        StopSandboxRequest.Builder request =
                StopSandboxRequest.newBuilder().setRequestId(requestId()).setTarget(target.target());
        precondition.precondition().ifPresent(request::setPrecondition);
        StopSandboxResponse response = session.stub().stopSandbox(request.build());
        if (session.printer().json()) {
            session.printer().json(response);
            return;
        }
        session.printer()
                .fields(new Printer.Fields()
                        .add("result", response.getOutcome().name() + (response.getReplayed() ? " (replayed)" : ""))
                        .add("stopped", "generation " + response.getGeneration())
                        .add("request", requestId())
                        .addAll(Printer.sandboxFields(response.hasSandbox(), response.getSandbox(), requestId())));
    }
}
