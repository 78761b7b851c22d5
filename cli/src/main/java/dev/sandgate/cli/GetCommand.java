package dev.sandgate.cli;

import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.GetSandboxResponse;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

@Command(name = "get", description = "Shows a sandbox, with the token of its current execution.")
final class GetCommand extends SandgateCommand {
    @Mixin
    TargetOptions target;

    @Override
    void run(Session session) {
        GetSandboxResponse response = session.stub()
                .getSandbox(GetSandboxRequest.newBuilder()
                        .setTarget(target.target())
                        .build());
        if (session.printer().json()) {
            session.printer().json(response);
        } else {
            session.printer().fields(Printer.sandboxFields(response.getSandbox()));
        }
    }
}
