package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.grpc.RequestFields.MAX_ENVIRONMENT_ENTRIES;
import static dev.sandgate.gateway.grpc.RequestFields.MAX_ENVIRONMENT_VALUE_LENGTH;
import static dev.sandgate.gateway.grpc.RequestFields.argv;
import static dev.sandgate.gateway.grpc.RequestFields.meta;
import static dev.sandgate.gateway.grpc.RequestFields.target;

import com.google.protobuf.Timestamp;
import dev.sandgate.api.v1.ExecStart;
import dev.sandgate.api.v1.StreamSandboxLogsRequest;
import dev.sandgate.gateway.api.ApiMethod;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.lifecycle.Commands;
import dev.sandgate.gateway.lifecycle.Execs;
import dev.sandgate.gateway.token.ExecutionTokens;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.TerminalSize;
import java.time.Instant;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The part of the mapping layer for the calls pinned to one execution: it reads {@code ExecStart} and {@code
 * StreamSandboxLogsRequest} into {@link Execs.Exec} and {@link Execs.Logs}, with the field rules of {@link
 * RequestFields}. Fields are named as in the request ({@code start.command}).
 */
final class ExecMapper {
    private static final Pattern ENVIRONMENT_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,255}");

    private ExecMapper() {}

    /**
     * The first message of an exec. Fields are named as in the request ({@code start.command}); the fingerprint of a
     * request_id leaves environment values out (they are secrets, and kept nowhere).
     */
    static Execs.Exec exec(ExecStart start) {
        ExecStart withoutValues = start.toBuilder()
                .clearEnvironment()
                .putAllEnvironment(start.getEnvironmentMap().keySet().stream()
                        .collect(java.util.stream.Collectors.toMap(name -> name, name -> "")))
                .build();
        Commands.RequestMeta meta = meta(ApiMethod.EXEC_SANDBOX, start.getRequestId(), withoutValues);
        Commands.Target target = prefixed("start.", () -> target(start.hasTarget() ? start.getTarget() : null));
        String token = requiredToken("start.execution_token", start.getExecutionToken());
        if (start.getCommandCount() == 0) {
            throw GatewayException.invalidField("start.command", "is required: at least the program");
        }
        if (start.getCommand(0).isEmpty()) {
            throw GatewayException.invalidField("start.command[0]", "the program must not be empty");
        }
        argv("start.command", start.getCommandList());
        if (start.getEnvironmentCount() > MAX_ENVIRONMENT_ENTRIES) {
            throw GatewayException.invalidField(
                    "start.environment", "at most " + MAX_ENVIRONMENT_ENTRIES + " variables are allowed");
        }
        start.getEnvironmentMap().forEach((name, value) -> {
            if (!ENVIRONMENT_NAME.matcher(name).matches()) {
                throw GatewayException.invalidField(
                        "start.environment",
                        "names must be letters, digits and '_', not starting with a digit (at most 256 characters)");
            }
            if (value.length() > MAX_ENVIRONMENT_VALUE_LENGTH || value.indexOf('\0') >= 0) {
                throw GatewayException.invalidField(
                        "start.environment[" + name + "]",
                        "values must be at most " + MAX_ENVIRONMENT_VALUE_LENGTH + " characters, without NUL");
            }
        });
        String workingDir = start.getWorkingDir();
        if (!workingDir.isEmpty()
                && (!workingDir.startsWith("/") || workingDir.indexOf('\0') >= 0 || workingDir.length() > 4096)) {
            throw GatewayException.invalidField("start.working_dir", "must be an absolute path");
        }
        Optional<TerminalSize> size = Optional.empty();
        if (start.hasTerminalSize()) {
            if (!start.getTty()) {
                throw GatewayException.invalidField("start.terminal_size", "is only allowed with start.tty");
            }
            size = Optional.of(terminalSize("start.terminal_size", start.getTerminalSize()));
        }
        ExecCommand command = new ExecCommand(
                start.getCommandList(),
                start.getEnvironmentMap(),
                workingDir.isEmpty() ? Optional.empty() : Optional.of(workingDir),
                start.getTty(),
                start.getStdin(),
                size);
        return new Execs.Exec(meta, target, token, "start.execution_token", command);
    }

    /** A terminal size from a request; INVALID_FIELD naming {@code field} unless both are 1 to 65535. */
    static TerminalSize terminalSize(String field, dev.sandgate.api.v1.TerminalSize size) {
        if (size.getColumns() < 1 || size.getRows() < 1 || size.getColumns() > 65535 || size.getRows() > 65535) {
            throw GatewayException.invalidField(field, "columns and rows must be between 1 and 65535");
        }
        return new TerminalSize(size.getColumns(), size.getRows());
    }

    static Execs.Logs logs(StreamSandboxLogsRequest request) {
        Commands.Target target = target(request.hasTarget() ? request.getTarget() : null);
        String token = requiredToken("execution_token", request.getExecutionToken());
        Optional<Instant> since = Optional.empty();
        if (request.hasSince()) {
            Timestamp t = request.getSince();
            if (t.getSeconds() < 0 || t.getNanos() < 0 || t.getNanos() > 999_999_999) {
                throw GatewayException.invalidField("since", "must be a valid time after 1970");
            }
            since = Optional.of(Instant.ofEpochSecond(t.getSeconds(), t.getNanos()));
        }
        return new Execs.Logs(target, token, "execution_token", new LogQuery(request.getFollow(), since));
    }

    private static String requiredToken(String field, String token) {
        if (token.isEmpty()) {
            throw GatewayException.invalidField(field, "is required: the execution to act in (GetSandbox shows it)");
        }
        ExecutionTokens.requireWellFormed(field, token);
        return token;
    }

    /** Runs {@code parse}, naming the fields of its INVALID_FIELD errors under {@code prefix}. */
    private static <T> T prefixed(String prefix, java.util.function.Supplier<T> parse) {
        try {
            return parse.get();
        } catch (GatewayException e) {
            if (e.field().isEmpty()) {
                throw e;
            }
            String field = e.field().get();
            String message = e.getMessage().startsWith(field + ": ")
                    ? e.getMessage().substring(field.length() + 2)
                    : e.getMessage();
            throw GatewayException.invalidField(prefix + field, message);
        }
    }
}
