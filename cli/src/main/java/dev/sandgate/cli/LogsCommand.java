package dev.sandgate.cli;

import com.google.protobuf.Timestamp;
import dev.sandgate.api.v1.LogStream;
import dev.sandgate.api.v1.StreamSandboxLogsRequest;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "logs", description = "Prints the output of the sandbox's current (or the --token) execution.")
final class LogsCommand extends SandgateCommand {
    @Mixin
    TargetOptions target;

    @Mixin
    ExecutionOptions execution;

    @Option(
            names = {"-f", "--follow"},
            description = "Keep printing new output until the execution ends.")
    boolean follow;

    @Option(names = "--since", paramLabel = "TIME", description = "Only output since this time (ISO-8601).")
    String since;

    @Override
    void run(Session session) {
        StreamSandboxLogsRequest.Builder request = StreamSandboxLogsRequest.newBuilder()
                .setTarget(target.target())
                .setExecutionToken(execution.token(session, target.target()))
                .setFollow(follow);
        if (since != null) {
            try {
                Instant at = Instant.parse(since);
                request.setSince(
                        Timestamp.newBuilder().setSeconds(at.getEpochSecond()).setNanos(at.getNano()));
            } catch (DateTimeParseException e) {
                throw usage("--since must be an ISO-8601 time, e.g. 2026-01-02T03:04:05Z");
            }
        }
        session.streamingStub()
                .streamSandboxLogs(request.build())
                .forEachRemaining(chunk -> session.printer()
                        .raw(chunk.getData().toString(StandardCharsets.UTF_8), chunk.getStream() == LogStream.STDERR));
    }
}
