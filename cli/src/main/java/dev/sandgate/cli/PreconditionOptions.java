package dev.sandgate.cli;

import dev.sandgate.api.v1.ExecutionPrecondition;
import java.util.Optional;
import picocli.CommandLine.Option;

/** The condition of a stop or delete: act only on this sandbox id and/or this execution. */
final class PreconditionOptions {
    @Option(
            names = "--expect-id",
            paramLabel = "ID",
            description = "Act only if the sandbox has this id (else FAILED_PRECONDITION SANDBOX_ID_MISMATCH).")
    String expectedId;

    @Option(
            names = "--expect-token",
            paramLabel = "TOKEN",
            description = "Act only if this execution token names the current execution"
                    + " (else FAILED_PRECONDITION STALE_EXECUTION).")
    String expectedToken;

    /** Empty when neither option is given: the operation is unconditional. */
    Optional<ExecutionPrecondition> precondition() {
        if (expectedId == null && expectedToken == null) {
            return Optional.empty();
        }
        ExecutionPrecondition.Builder precondition = ExecutionPrecondition.newBuilder();
        if (expectedId != null) {
            precondition.setExpectedSandboxId(expectedId);
        }
        if (expectedToken != null) {
            precondition.setExpectedExecutionToken(expectedToken);
        }
        return Optional.of(precondition.build());
    }
}
