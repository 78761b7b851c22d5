package dev.sandgate.cli;

import dev.sandgate.api.v1.GetOperationRequest;
import dev.sandgate.api.v1.Operation;
import io.grpc.Status;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

@Command(
        name = "operation",
        description = "Looks up earlier mutating requests.",
        subcommands = {OperationCommand.Get.class})
final class OperationCommand implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "a command is required: get");
    }

    @Command(name = "get", description = "The recorded request and its result, by request id.")
    static final class Get extends SandgateCommand {
        @Parameters(paramLabel = "REQUEST_ID", description = "The request_id the call was made with.")
        String requestId;

        @Override
        void run(Session session) {
            Operation operation = session.stub()
                    .getOperation(GetOperationRequest.newBuilder()
                            .setRequestId(requestId)
                            .build());
            if (session.printer().json()) {
                session.printer().json(operation);
                return;
            }
            Printer.Fields fields = new Printer.Fields()
                    .add("request", operation.getRequestId())
                    .add("method", operation.getMethod())
                    .add("sandbox", operation.getSandboxId())
                    // 0: the request failed before it reached an execution (e.g. no such sandbox).
                    .add("generation", operation.getGeneration() > 0 ? Long.toString(operation.getGeneration()) : "")
                    .add("done", operation.getDone() ? "yes" : "no (in progress)")
                    .add("result", result(operation))
                    .add("created", Printer.time(operation.getCreateTime()))
                    .add("completed", Printer.time(operation.getCompleteTime()));
            session.printer().fields(fields);
        }

        private static String result(Operation operation) {
            return switch (operation.getResultCase()) {
                case ERROR ->
                    "error "
                            + Status.fromCodeValue(operation.getError().getCode())
                                    .getCode() + ": " + operation.getError().getMessage();
                case CREATE -> "created " + operation.getCreate().getSandbox().getId();
                case STOP ->
                    operation.getStop().getOutcome().name() + ", generation "
                            + operation.getStop().getGeneration();
                case START ->
                    operation.getStart().getOutcome().name() + ", generation "
                            + operation.getStart().getExecution().getGeneration();
                case DELETE -> operation.getDelete().getOutcome().name();
                case UPDATE_POLICY ->
                    "policy revision "
                            + operation.getUpdatePolicy().getAdmitted().getRevision();
                case RENEW_LEASE ->
                    "lease renewed, generation "
                            + operation.getRenewLease().getLease().getGeneration();
                case EXEC ->
                    "exited " + operation.getExec().getExitCode() + ", generation "
                            + operation.getExec().getGeneration();
                case RESULT_NOT_SET -> "";
            };
        }
    }
}
