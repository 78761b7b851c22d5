package dev.sandgate.cli;

import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StartSandboxResponse;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "start", description = "Launches a new execution (a new generation) of a stopped sandbox.")
final class StartCommand extends MutatingCommand {
    @Mixin
    TargetOptions target;

    @Option(names = "--wait", description = "Wait until the driver reports the sandbox running (or failed).")
    boolean waitUntilReady;

    @Override
    void run(Session session) {
        StartSandboxResponse response = session.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setRequestId(requestId())
                        .setTarget(target.target())
                        .setWaitUntilReady(waitUntilReady)
                        .build());
        if (session.printer().json()) {
            session.printer().json(response);
            return;
        }
        Printer.Fields fields = new Printer.Fields()
                .add("result", response.getOutcome().name() + (response.getReplayed() ? " (replayed)" : ""))
                .add("request", requestId());
        if (!response.hasSandbox() && response.hasExecution()) {
            fields.add("generation", Long.toString(response.getExecution().getGeneration()));
        }
        session.printer()
                .fields(fields.addAll(
                        Printer.sandboxFields(response.hasSandbox(), response.getSandbox(), requestId())));
    }
}
