package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.testing.TestGateway.byId;
import static dev.sandgate.gateway.testing.TestGateway.byName;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import dev.sandgate.api.v1.ExecSandboxRequest;
import dev.sandgate.api.v1.ExecSandboxResponse;
import dev.sandgate.api.v1.ExecStart;
import dev.sandgate.api.v1.GetOperationRequest;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.StreamSandboxLogsRequest;
import dev.sandgate.api.v1.StreamSandboxLogsResponse;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ExecAndLogsTest {
    @TempDir
    Path root;

    private TestGateway gw;

    @AfterEach
    void close() {
        if (gw != null) {
            gw.close();
        }
    }

    private TestGateway withExec() {
        gw = TestGateway.start(
                root,
                TestGateway.Transport.IN_PROCESS,
                FakeDriver.allCapabilities().withExecAndLogs(true, true));
        return gw;
    }

    /** One exec call as a client makes it: the responses as they come, and how it ended. */
    private static class Exec implements ClientResponseObserver<ExecSandboxRequest, ExecSandboxResponse> {
        final List<ExecSandboxResponse> responses = new java.util.concurrent.CopyOnWriteArrayList<>();
        final CompletableFuture<Status> end = new CompletableFuture<>();
        volatile ClientCallStreamObserver<ExecSandboxRequest> requests;
        StatusRuntimeException error;

        @Override
        public void beforeStart(ClientCallStreamObserver<ExecSandboxRequest> requestStream) {
            requests = requestStream;
        }

        @Override
        public void onNext(ExecSandboxResponse value) {
            responses.add(value);
        }

        @Override
        public void onError(Throwable t) {
            error = (StatusRuntimeException) t;
            end.complete(Status.fromThrowable(t));
        }

        @Override
        public void onCompleted() {
            end.complete(Status.OK);
        }

        Status await() throws Exception {
            return end.get(30, TimeUnit.SECONDS);
        }

        String stdout() {
            StringBuilder b = new StringBuilder();
            responses.stream()
                    .filter(ExecSandboxResponse::hasStdout)
                    .forEach(r -> b.append(r.getStdout().toString(StandardCharsets.UTF_8)));
            return b.toString();
        }

        String stderr() {
            StringBuilder b = new StringBuilder();
            responses.stream()
                    .filter(ExecSandboxResponse::hasStderr)
                    .forEach(r -> b.append(r.getStderr().toString(StandardCharsets.UTF_8)));
            return b.toString();
        }

        ExecSandboxResponse last() {
            return responses.getLast();
        }
    }

    private Exec exec(ExecStart start) {
        Exec call = new Exec();
        StreamObserver<ExecSandboxRequest> requests = gw.asyncStub().execSandbox(call);
        requests.onNext(ExecSandboxRequest.newBuilder().setStart(start).build());
        return call;
    }

    private static ExecStart.Builder start(Sandbox s, String... argv) {
        return ExecStart.newBuilder()
                .setTarget(byId(s.getId()))
                .setExecutionToken(s.getCurrentExecution().getExecutionToken())
                .addAllCommand(List.of(argv));
    }

    private Sandbox get(Sandbox s) {
        return gw.stub()
                .getSandbox(GetSandboxRequest.newBuilder()
                        .setTarget(byId(s.getId()))
                        .build())
                .getSandbox();
    }

    @Test
    void anExecAnswersItsStartItsOutputAndItsExitCode() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");

        Exec echo = exec(start(s, "echo", "hello", "world").build());
        Exec failing = exec(start(s, "fail", "3", "broken").build());

        assertThat(echo.await().isOk()).isTrue();
        assertThat(echo.responses.getFirst().getStarted().getSandboxId()).isEqualTo(s.getId());
        assertThat(echo.responses.getFirst().getStarted().getGeneration()).isEqualTo(1);
        assertThat(echo.stdout()).isEqualTo("hello world\n");
        assertThat(echo.last().getExited().getExitCode()).isZero();
        assertThat(failing.await().isOk()).isTrue();
        assertThat(failing.stderr()).isEqualTo("broken\n");
        assertThat(failing.last().getExited().getExitCode()).isEqualTo(3);
    }

    @Test
    void standardInputReachesTheCommandAndItsEndEndsIt() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");

        Exec cat = exec(start(s, "cat").setStdin(true).build());
        cat.requests.onNext(ExecSandboxRequest.newBuilder()
                .setStdin(ByteString.copyFromUtf8("abc"))
                .build());
        cat.requests.onNext(ExecSandboxRequest.newBuilder()
                .setStdin(ByteString.copyFromUtf8("def"))
                .build());
        cat.requests.onNext(ExecSandboxRequest.newBuilder().setCloseStdin(true).build());
        cat.requests.onCompleted();

        assertThat(cat.await().isOk()).isTrue();
        assertThat(cat.stdout()).isEqualTo("abcdef");
        assertThat(cat.last().getExited().getExitCode()).isZero();
    }

    @Test
    void aDriverWithoutTheCapabilityRefusesBeforeAnythingRuns() throws Exception {
        gw = TestGateway.start(root, TestGateway.Transport.IN_PROCESS);
        Sandbox s = gw.create("ws", "one");

        Exec call = exec(start(s, "echo", "x").build());
        call.await();
        Iterator<StreamSandboxLogsResponse> logs = gw.stub()
                .streamSandboxLogs(StreamSandboxLogsRequest.newBuilder()
                        .setTarget(byId(s.getId()))
                        .setExecutionToken(s.getCurrentExecution().getExecutionToken())
                        .build());

        assertThat(GrpcErrors.read(call.error).reason()).isEqualTo("CAPABILITY_UNSUPPORTED");
        assertThat(call.error.getStatus().getCode()).isEqualTo(Status.Code.UNIMPLEMENTED);
        var failure = GrpcErrors.failure(logs::next);
        assertThat(failure.code()).isEqualTo(Status.Code.UNIMPLEMENTED);
        assertThat(failure.reason()).isEqualTo("CAPABILITY_UNSUPPORTED");
    }

    @Test
    void aTokenOfAnOlderExecutionIsStaleAndNothingRuns() throws Exception {
        withExec();
        Sandbox first = gw.create("ws", "one");
        gw.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(first.getId()))
                        .build());
        gw.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(first.getId()))
                        .build());

        Exec call = exec(start(first, "echo", "x").build());
        call.await();

        assertThat(GrpcErrors.read(call.error).reason()).isEqualTo("STALE_EXECUTION");
        assertThat(gw.driver().execs()).isZero();
    }

    @Test
    void anExecInAStoppedExecutionIsNotRunning() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");
        gw.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(s.getId()))
                        .build());

        Exec call =
                exec(start(get(s), "echo", "x").setTarget(byName("ws", "one")).build());
        call.await();

        assertThat(GrpcErrors.read(call.error).reason()).isEqualTo("NOT_RUNNING");
        assertThat(call.error.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(gw.driver().execs()).isZero();
    }

    @Test
    void theFirstMessageMustBeTheStartAndItsFieldsAreValidated() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");

        Exec noStart = new Exec();
        gw.asyncStub()
                .execSandbox(noStart)
                .onNext(ExecSandboxRequest.newBuilder().setCloseStdin(true).build());
        Exec noCommand = exec(start(s).build());
        Exec noToken = exec(start(s, "echo").clearExecutionToken().build());
        Exec badEnv =
                exec(start(s, "echo").putEnvironment("1BAD", "secret-value").build());

        noStart.await();
        noCommand.await();
        noToken.await();
        badEnv.await();
        assertThat(GrpcErrors.read(noStart.error).field()).contains("start");
        assertThat(GrpcErrors.read(noCommand.error).field()).contains("start.command");
        assertThat(GrpcErrors.read(noToken.error).field()).contains("start.execution_token");
        assertThat(GrpcErrors.read(badEnv.error).field()).contains("start.environment");
        assertThat(badEnv.error.getMessage()).doesNotContain("secret-value");
    }

    @Test
    void aRetryOfAFinishedExecReplaysItsExitCodeAndRunsNothing() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");
        String requestId = TestGateway.newRequestId();

        Exec first = exec(start(s, "fail", "7", "x").setRequestId(requestId).build());
        first.await();
        Exec retry = exec(start(s, "fail", "7", "x").setRequestId(requestId).build());
        retry.await();

        assertThat(retry.responses).hasSize(2);
        assertThat(retry.responses.getFirst().getStarted().getReplayed()).isTrue();
        assertThat(retry.last().getExited().getExitCode()).isEqualTo(7);
        assertThat(gw.driver().execs()).isEqualTo(1);
        var operation = gw.stub()
                .getOperation(
                        GetOperationRequest.newBuilder().setRequestId(requestId).build());
        assertThat(operation.getMethod()).isEqualTo("ExecSandbox");
        assertThat(operation.getExec().getExitCode()).isEqualTo(7);
    }

    @Test
    void theSameRequestIdWithAnotherCommandIsReused() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");
        String requestId = TestGateway.newRequestId();
        exec(start(s, "echo", "a").setRequestId(requestId).build()).await();

        Exec other = exec(start(s, "echo", "b").setRequestId(requestId).build());
        other.await();

        assertThat(GrpcErrors.read(other.error).reason()).isEqualTo("REQUEST_ID_REUSED");
        assertThat(gw.driver().execs()).isEqualTo(1);
    }

    @Test
    void aRetryOfAnExecWithoutAResultAfterARestartIsUncertainAndRunsNothing() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");
        String requestId = TestGateway.newRequestId();
        Exec running = exec(start(s, "sleep").setRequestId(requestId).build());
        await().atMost(Duration.ofSeconds(30)).until(() -> !running.responses.isEmpty());

        gw.restart();
        Exec retry = exec(start(s, "sleep").setRequestId(requestId).build());
        retry.await();

        var failure = GrpcErrors.read(retry.error);
        assertThat(failure.code()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(failure.reason()).isEqualTo("EXEC_OUTCOME_UNCERTAIN");
        assertThat(gw.driver().execs()).isZero();
    }

    @Test
    void theClientsCancelClosesTheDriversProcess() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");
        Exec running = exec(start(s, "sleep").build());
        await().atMost(Duration.ofSeconds(30)).until(() -> !running.responses.isEmpty());

        running.requests.cancel("the client goes away", null);

        await().atMost(Duration.ofSeconds(30)).until(() -> gw.driver().closedExecs() == 1);
    }

    @Test
    void theClientsHalfCloseDoesNotEndTheCommand() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");
        Exec running = exec(start(s, "sleep").build());
        await().atMost(Duration.ofSeconds(30)).until(() -> !running.responses.isEmpty());

        running.requests.onCompleted();
        Exec probe = exec(start(s, "echo", "x").build());
        probe.await();

        assertThat(running.end).isNotDone();
        assertThat(gw.driver().closedExecs()).isZero();
        running.requests.cancel("done", null);
    }

    @Test
    void aRetryAfterTheDriverWasUnavailableRunsTheCommandOnce() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");
        String requestId = TestGateway.newRequestId();
        gw.driver().failNext(FakeDriver.Method.EXEC, new DriverException(DriverErrorCode.UNAVAILABLE, "engine busy"));

        Exec refused = exec(start(s, "echo", "hi").setRequestId(requestId).build());
        refused.await();
        Exec retry = exec(start(s, "echo", "hi").setRequestId(requestId).build());
        retry.await();
        Exec again = exec(start(s, "echo", "hi").setRequestId(requestId).build());
        again.await();

        assertThat(GrpcErrors.read(refused.error).reason()).isEqualTo("DRIVER_UNAVAILABLE");
        assertThat(retry.stdout()).isEqualTo("hi\n");
        assertThat(retry.responses.getFirst().getStarted().getReplayed()).isFalse();
        assertThat(retry.last().getExited().getExitCode()).isZero();
        assertThat(again.responses.getFirst().getStarted().getReplayed()).isTrue();
        assertThat(again.last().getExited().getExitCode()).isZero();
        assertThat(gw.driver().execs()).isEqualTo(1);
    }

    @Test
    void aRetryAfterAPermanentRefusalAnswersTheSameRefusalWithoutCallingTheDriver() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");
        String requestId = TestGateway.newRequestId();
        gw.driver()
                .failNext(
                        FakeDriver.Method.EXEC,
                        new DriverException(DriverErrorCode.INVALID_ARGUMENT, "command: not allowed here"));

        Exec refused = exec(start(s, "echo", "hi").setRequestId(requestId).build());
        refused.await();
        Exec retry = exec(start(s, "echo", "hi").setRequestId(requestId).build());
        retry.await();

        assertThat(GrpcErrors.read(retry.error).reason()).isEqualTo("INVALID_FIELD");
        assertThat(GrpcErrors.read(retry.error).field()).hasValue("command");
        assertThat(gw.driver().calls(FakeDriver.Method.EXEC)).isEqualTo(1);
        assertThat(gw.driver().execs()).isZero();
    }

    @Test
    void aRetryAfterADriverFailureOfUnknownOutcomeIsUncertainAndRunsNothing() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");
        String requestId = TestGateway.newRequestId();
        gw.driver()
                .failNext(FakeDriver.Method.EXEC, new DriverException(DriverErrorCode.DEADLINE_EXCEEDED, "no answer"));

        exec(start(s, "echo", "hi").setRequestId(requestId).build()).await();
        Exec retry = exec(start(s, "echo", "hi").setRequestId(requestId).build());
        retry.await();

        assertThat(GrpcErrors.read(retry.error).reason()).isEqualTo("EXEC_OUTCOME_UNCERTAIN");
        assertThat(gw.driver().calls(FakeDriver.Method.EXEC)).isEqualTo(1);
    }

    @Test
    void anExecTheDriverLostIsUncertainForARetryAndItsRecordIsPrunedAfterTheRetention() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");
        String requestId = TestGateway.newRequestId();

        Exec lost = exec(start(s, "lost").setRequestId(requestId).build());
        lost.await();
        Exec retry = exec(start(s, "lost").setRequestId(requestId).build());
        retry.await();

        assertThat(GrpcErrors.read(lost.error).reason()).isEqualTo("DRIVER_UNAVAILABLE");
        assertThat(GrpcErrors.read(retry.error).reason()).isEqualTo("EXEC_OUTCOME_UNCERTAIN");
        assertThat(gw.driver().execs()).isEqualTo(1);
        assertThat(gw.gateway().lifecycle().pruneRequests(Instant.now().plus(Duration.ofDays(1))))
                .isEqualTo(1);
        assertThat(operationNotFound(requestId)).isTrue();
    }

    @Test
    void anExecLeftWithoutAResultByARestartIsPrunedAfterTheRetentionFromItsAdmission() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");
        String requestId = TestGateway.newRequestId();
        Exec running = exec(start(s, "sleep").setRequestId(requestId).build());
        await().atMost(Duration.ofSeconds(30)).until(() -> !running.responses.isEmpty());
        gw.restart();

        assertThat(gw.gateway().lifecycle().pruneRequests(Instant.now().minus(Duration.ofDays(1))))
                .isZero();
        assertThat(operationNotFound(requestId)).isFalse();
        assertThat(gw.gateway().lifecycle().pruneRequests(Instant.now().plus(Duration.ofDays(1))))
                .isEqualTo(1);
        assertThat(operationNotFound(requestId)).isTrue();
    }

    private boolean operationNotFound(String requestId) {
        try {
            gw.stub()
                    .getOperation(GetOperationRequest.newBuilder()
                            .setRequestId(requestId)
                            .build());
            return false;
        } catch (StatusRuntimeException e) {
            return GrpcErrors.read(e).reason().equals("OPERATION_NOT_FOUND");
        }
    }

    @Test
    void aClientThatDoesNotReadPausesTheCommandsOutputAtABoundedCount() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");
        int chunks = 2000;
        Exec flood = new Exec() {
            @Override
            public void beforeStart(ClientCallStreamObserver<ExecSandboxRequest> requestStream) {
                super.beforeStart(requestStream);
                requestStream.disableAutoInboundFlowControl(); // reads nothing until the test asks
            }
        };
        gw.asyncStub()
                .execSandbox(flood)
                .onNext(ExecSandboxRequest.newBuilder()
                        .setStart(start(s, "flood", Integer.toString(chunks), "1024"))
                        .build());

        await().atMost(Duration.ofSeconds(30)).until(() -> gw.driver().lastExecWaits());
        int taken = gw.driver().outputsTaken();
        flood.requests.request(Integer.MAX_VALUE);
        flood.await();

        assertThat(taken).isLessThanOrEqualTo(StreamSender.MAX_HELD + 1);
        assertThat(flood.responses.stream().filter(ExecSandboxResponse::hasStdout))
                .hasSize(chunks);
        assertThat(flood.last().getExited().getExitCode()).isZero();
    }

    @Test
    void outputTheDriverDeliversBeforeItsCallReturnedFollowsTheStart() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");

        Exec eager = exec(start(s, "eager", "10").build());
        eager.await();

        assertThat(eager.responses.getFirst().hasStarted()).isTrue();
        assertThat(eager.stdout()).isEqualTo("x".repeat(10));
        assertThat(eager.last().getExited().getExitCode()).isZero();
    }

    @Test
    void moreOutputThanTheGatewayHoldsBeforeTheDriversCallReturnedEndsTheExecWithDriverInternal() throws Exception {
        withExec();
        Sandbox s = gw.create("ws", "one");

        Exec eager = exec(
                start(s, "eager", Integer.toString(StreamSender.MAX_HELD + 1)).build());
        eager.await();

        assertThat(GrpcErrors.read(eager.error).reason()).isEqualTo("DRIVER_INTERNAL");
        assertThat(eager.responses).isEmpty();
    }

    @Test
    void logsStreamTheOutputOfTheTokensExecution() {
        withExec();
        Sandbox s = gw.create("ws", "one");

        List<StreamSandboxLogsResponse> lines = new ArrayList<>();
        gw.stub()
                .streamSandboxLogs(StreamSandboxLogsRequest.newBuilder()
                        .setTarget(byName("ws", "one"))
                        .setExecutionToken(s.getCurrentExecution().getExecutionToken())
                        .build())
                .forEachRemaining(lines::add);

        assertThat(lines).extracting(r -> r.getData().toStringUtf8()).containsExactly("out 1\n", "err 1\n");
        assertThat(lines)
                .extracting(StreamSandboxLogsResponse::getStream)
                .containsExactly(dev.sandgate.api.v1.LogStream.STDOUT, dev.sandgate.api.v1.LogStream.STDERR);
    }

    @Test
    void logsOfAnOlderExecutionAreStale() {
        withExec();
        Sandbox first = gw.create("ws", "one");
        gw.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(first.getId()))
                        .build());
        gw.stub()
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(first.getId()))
                        .build());

        Iterator<StreamSandboxLogsResponse> logs = gw.stub()
                .streamSandboxLogs(StreamSandboxLogsRequest.newBuilder()
                        .setTarget(byId(first.getId()))
                        .setExecutionToken(first.getCurrentExecution().getExecutionToken())
                        .build());

        assertThat(GrpcErrors.failure(logs::next).reason()).isEqualTo("STALE_EXECUTION");
    }
}
