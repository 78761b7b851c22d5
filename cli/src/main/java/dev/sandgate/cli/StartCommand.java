package dev.sandgate.cli;

import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StartSandboxResponse;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "start", description = "Launches a new execution (a new generation) of a stopped sandbox.")
final class StartCommand extends SandgateCommand {
    @Mixin
    TargetOptions target;

    @Option(names = "--wait", description = "Wait until the driver reports the sandbox running (or failed).")
    boolean waitUntilReady;

    @Mixin
    RequestIdOption requestId;

    @Override
    void run(Session session) {
        StartSandboxResponse response = session.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setRequestId(requestId.requestId())
                        .setTarget(target.target())
                        .setWaitUntilReady(waitUntilReady)
                        .build());
        if (session.printer().json()) {
            session.printer().json(response);
            return;
        }
        session.printer()
                .fields(new Printer.Fields()
                        .add("result", response.getOutcome().name() + (response.getReplayed() ? " (replayed)" : ""))
                        .add("request", requestId.requestId())
                        .addAll(Printer.sandboxFields(response.getSandbox())));
    }
}
