package dev.sandgate.cli;

import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.SandboxTarget;
import picocli.CommandLine.Option;

/** Which execution a command acts in: a given token, or the sandbox's current one (looked up first). */
final class ExecutionOptions {
    @Option(
            names = {"--execution-token", "--expect-token"},
            paramLabel = "TOKEN",
            description = "The execution token (from get); --token is the gateway credential.")
    String token;

    @Option(names = "--current", description = "The sandbox's current execution (the default).")
    boolean current;

    String token(Session session, SandboxTarget target) {
        if (token != null && !token.isEmpty()) {
            return token;
        }
        return session.stub()
                .getSandbox(GetSandboxRequest.newBuilder().setTarget(target).build())
                .getSandbox()
                .getCurrentExecution()
                .getExecutionToken();
    }
}
