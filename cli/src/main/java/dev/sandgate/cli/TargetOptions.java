package dev.sandgate.cli;

import dev.sandgate.api.v1.SandboxTarget;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** Names one sandbox: its id, or its workspace and name, or all three (then the id is authoritative). */
final class TargetOptions {
    @Spec(Spec.Target.MIXEE)
    CommandSpec mixee;

    @Option(names = "--id", paramLabel = "ID", description = "The sandbox's id (authoritative).")
    String id = "";

    @Option(
            names = {"-w", "--workspace"},
            paramLabel = "WORKSPACE",
            description = "The sandbox's workspace.")
    String workspace = "";

    @Option(
            names = {"-n", "--name"},
            paramLabel = "NAME",
            description = "The sandbox's name in its workspace.")
    String name = "";

    SandboxTarget target() {
        if (id.isEmpty() && (workspace.isEmpty() || name.isEmpty())) {
            throw new ParameterException(
                    mixee.commandLine(), "name the sandbox with --id, or with --workspace and --name");
        }
        return SandboxTarget.newBuilder()
                .setId(id)
                .setWorkspace(workspace)
                .setName(name)
                .build();
    }
}
