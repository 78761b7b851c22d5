package dev.sandgate.cli;

import dev.sandgate.api.v1.RenewSandboxLeaseRequest;
import dev.sandgate.api.v1.RenewSandboxLeaseResponse;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "renew",
        description = "Renews the idle lease of the execution the token names (the TTL deadline never moves).",
        footer = {"", "Example: sandgate renew -w demo -n hello --execution-token TOKEN"})
final class RenewCommand extends MutatingCommand {
    @Mixin
    TargetOptions target;

    @Option(
            names = "--execution-token",
            required = true,
            paramLabel = "TOKEN",
            description = "The execution token of the running execution whose lease is renewed (sandgate get shows"
                    + " it); a token of an older execution is refused.")
    String token;

    @Override
    void run(Session session) {
        RenewSandboxLeaseResponse response = session.stub()
                .renewSandboxLease(RenewSandboxLeaseRequest.newBuilder()
                        .setRequestId(requestId())
                        .setTarget(target.target())
                        .setExecutionToken(token)
                        .build());
        if (session.printer().json()) {
            session.printer().json(response);
            return;
        }
        Printer.Fields fields = new Printer.Fields()
                .add("result", response.getReplayed() ? "renewed (replayed)" : "renewed")
                .add("request", requestId());
        if (response.hasLease()) {
            fields.add("lease", Printer.lease(response.getLease()));
        } else {
            fields.add("lease", "none (the sandbox has no expiry policy)");
        }
        session.printer().fields(fields);
    }
}
