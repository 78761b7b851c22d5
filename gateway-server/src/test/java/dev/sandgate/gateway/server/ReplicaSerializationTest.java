package dev.sandgate.gateway.server;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.ExecutionPrecondition;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopOutcome;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.StopSandboxResponse;
import dev.sandgate.gateway.store.PostgresStore;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.gateway.testing.TestPostgres;
import dev.sandgate.testing.EngineTest;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two gateway replicas on one PostgreSQL: an operation on a sandbox through one replica waits for the driver call that
 * another replica is making on it, and never makes a driver call of its own meanwhile; a duplicate request_id on
 * another replica waits for the first's answer and replays it.
 */
@EngineTest
class ReplicaSerializationTest {
    @TempDir
    Path dir;

    private PostgresStore.Settings settings;

    @BeforeEach
    void emptyDatabase() throws Exception {
        settings = TestPostgres.settings();
        new PostgresStore(settings).close(); // migrated
        TestPostgres.truncate(settings);
    }

    private String[] storeArgs() throws Exception {
        Path passwordFile = dir.resolve("password");
        java.nio.file.Files.writeString(passwordFile, settings.password().orElse("unused"));
        java.nio.file.Files.setPosixFilePermissions(
                passwordFile, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        return List.of(
                        "--store-url",
                        settings.url(),
                        "--store-user",
                        settings.user(),
                        "--store-password-file",
                        passwordFile.toString(),
                        // One token key for every replica, as operated: a token one mints verifies on the other.
                        "--token-key-file",
                        dir.resolve("token-keys.properties").toString())
                .toArray(String[]::new);
    }

    @Test
    @DisplayName("a stop through replica B while replica A's stop of the sandbox is in its driver call waits for it"
            + " (busy at its deadline), makes no driver call, and after A finishes finds the sandbox stopped")
    void oneReplicaAtATimePerSandbox() throws Exception {
        String[] store = storeArgs();
        try (TestGateway a = TestGateway.start(
                        dir.resolve("a"), TestGateway.Transport.IN_PROCESS, FakeDriver.allCapabilities(), store);
                TestGateway b = TestGateway.start(
                        dir.resolve("b"), TestGateway.Transport.IN_PROCESS, FakeDriver.allCapabilities(), store);
                ExecutorService threads = Executors.newSingleThreadExecutor()) {
            String id = a.create("team", "shared").getId();
            CountDownLatch entered = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            a.driver().holdEach(FakeDriver.Method.STOP, entered, release);
            CompletableFuture<StopSandboxResponse> first = CompletableFuture.supplyAsync(
                    () -> a.stub()
                            .stopSandbox(StopSandboxRequest.newBuilder()
                                    .setTarget(TestGateway.byId(id))
                                    .build()),
                    threads);
            entered.await();

            GrpcErrors.Failure busy = failure(() -> b.stub()
                    .withDeadlineAfter(1, TimeUnit.SECONDS)
                    .stopSandbox(StopSandboxRequest.newBuilder()
                            .setTarget(TestGateway.byId(id))
                            .build()));
            release.countDown();
            StopOutcome firstOutcome = first.get().getOutcome();
            StopOutcome second = b.stub()
                    .stopSandbox(StopSandboxRequest.newBuilder()
                            .setTarget(TestGateway.byId(id))
                            .build())
                    .getOutcome();

            // SANDBOX_BUSY from the gateway, or the client's own deadline first: DEADLINE_EXCEEDED either way.
            assertThat(busy.code()).isEqualTo(io.grpc.Status.Code.DEADLINE_EXCEEDED);
            assertThat(firstOutcome).isEqualTo(StopOutcome.STOPPED_NOW);
            assertThat(second).isEqualTo(StopOutcome.ALREADY_STOPPED);
            assertThat(a.driver().calls(FakeDriver.Method.STOP)).isEqualTo(1);
            assertThat(b.driver().calls(FakeDriver.Method.STOP)).isZero();
        }
    }

    @Test
    @DisplayName("a stop with the request_id of a stop that replica A has in its driver call, sent to replica B, waits"
            + " for A's answer and replays it; the driver is called once")
    void duplicateStopOnAnotherReplicaReplaysTheFirst() throws Exception {
        String[] store = storeArgs();
        try (TestGateway a = TestGateway.start(
                        dir.resolve("a"), TestGateway.Transport.IN_PROCESS, FakeDriver.allCapabilities(), store);
                TestGateway b = TestGateway.start(
                        dir.resolve("b"), TestGateway.Transport.IN_PROCESS, FakeDriver.allCapabilities(), store);
                ExecutorService threads = Executors.newFixedThreadPool(2)) {
            String id = a.create("team", "shared").getId();
            StopSandboxRequest stop = StopSandboxRequest.newBuilder()
                    .setRequestId(TestGateway.newRequestId())
                    .setTarget(TestGateway.byId(id))
                    .build();
            CountDownLatch entered = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            a.driver().holdEach(FakeDriver.Method.STOP, entered, release);
            CompletableFuture<StopSandboxResponse> first =
                    CompletableFuture.supplyAsync(() -> a.stub().stopSandbox(stop), threads);
            entered.await();

            CompletableFuture<StopSandboxResponse> duplicate =
                    CompletableFuture.supplyAsync(() -> b.stub().stopSandbox(stop), threads);
            boolean answeredWhileHeld = duplicate.isDone();
            release.countDown();
            StopSandboxResponse original = first.get();
            StopSandboxResponse replayed = duplicate.get();

            assertThat(answeredWhileHeld).isFalse();
            assertThat(original.getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
            assertThat(original.getReplayed()).isFalse();
            assertThat(replayed.getReplayed()).isTrue();
            assertThat(replayed.toBuilder().setReplayed(false).build()).isEqualTo(original);
            assertThat(a.driver().calls(FakeDriver.Method.STOP)).isEqualTo(1);
            assertThat(b.driver().calls(FakeDriver.Method.STOP)).isZero();
        }
    }

    @Test
    @DisplayName("a create sent with one request_id to both replicas, B's admitted before A's intent was recorded,"
            + " makes one sandbox with one driver call, and B replays A's answer instead of SANDBOX_ALREADY_EXISTS")
    void duplicateCreateOnTwoReplicasMakesOneSandbox() throws Exception {
        String[] store = storeArgs();
        try (TestGateway a = TestGateway.start(
                        dir.resolve("a"), TestGateway.Transport.IN_PROCESS, FakeDriver.allCapabilities(), store);
                TestGateway b = TestGateway.start(
                        dir.resolve("b"), TestGateway.Transport.IN_PROCESS, FakeDriver.allCapabilities(), store);
                ExecutorService threads = Executors.newFixedThreadPool(2)) {
            CreateSandboxRequest create = TestGateway.createRequest("team", "twice")
                    .setRequestId(TestGateway.newRequestId())
                    .build();
            // B found no request with the id and is validating its spec when A records its intent and calls the
            // driver: B's own intent then meets A's sandbox.
            CountDownLatch bValidating = new CountDownLatch(1);
            CountDownLatch bGoOn = new CountDownLatch(1);
            b.driver().holdEach(FakeDriver.Method.VALIDATE, bValidating, bGoOn);
            CountDownLatch aCreating = new CountDownLatch(1);
            CountDownLatch aGoOn = new CountDownLatch(1);
            a.driver().holdEach(FakeDriver.Method.CREATE, aCreating, aGoOn);
            CompletableFuture<CreateSandboxResponse> duplicate =
                    CompletableFuture.supplyAsync(() -> b.stub().createSandbox(create), threads);
            bValidating.await();
            CompletableFuture<CreateSandboxResponse> first =
                    CompletableFuture.supplyAsync(() -> a.stub().createSandbox(create), threads);
            aCreating.await();
            bGoOn.countDown();
            aGoOn.countDown();
            CreateSandboxResponse original = first.get();
            CreateSandboxResponse replayed = duplicate.get();

            assertThat(original.getReplayed()).isFalse();
            assertThat(replayed.getReplayed()).isTrue();
            assertThat(replayed.getSandbox()).isEqualTo(original.getSandbox());
            assertThat(a.stub()
                            .listSandboxes(ListSandboxesRequest.newBuilder()
                                    .setWorkspace("team")
                                    .build())
                            .getSandboxesList())
                    .extracting(Sandbox::getId)
                    .containsExactly(original.getSandbox().getId());
            assertThat(a.driver().calls(FakeDriver.Method.CREATE)).isEqualTo(1);
            assertThat(b.driver().calls(FakeDriver.Method.CREATE)).isZero();
        }
    }

    /** Rounds of a race whose window is short: enough that, before the fix, the duplicate's insert met the first's. */
    private static final int ROUNDS = 20;

    @Test
    @DisplayName("a refused request (a stop with a stale execution token, a stop of no such sandbox) sent with one"
            + " request_id to both replicas at once gets the same refusal from both, never INTERNAL")
    void duplicateRefusalOnTwoReplicasAnswersTheSameRefusal() throws Exception {
        String[] store = storeArgs();
        try (TestGateway a = TestGateway.start(
                        dir.resolve("a"), TestGateway.Transport.IN_PROCESS, FakeDriver.allCapabilities(), store);
                TestGateway b = TestGateway.start(
                        dir.resolve("b"), TestGateway.Transport.IN_PROCESS, FakeDriver.allCapabilities(), store);
                ExecutorService threads = Executors.newFixedThreadPool(2)) {
            Sandbox sandbox = a.create("team", "restarted");
            String staleToken = sandbox.getCurrentExecution().getExecutionToken();
            a.stub()
                    .stopSandbox(StopSandboxRequest.newBuilder()
                            .setTarget(TestGateway.byId(sandbox.getId()))
                            .build());
            a.stub()
                    .startSandbox(StartSandboxRequest.newBuilder()
                            .setTarget(TestGateway.byId(sandbox.getId()))
                            .build());
            List<List<String>> answers = new ArrayList<>();
            for (int round = 0; round < ROUNDS; round++) {
                StopSandboxRequest stale = StopSandboxRequest.newBuilder()
                        .setRequestId(TestGateway.newRequestId())
                        .setTarget(TestGateway.byId(sandbox.getId()))
                        .setPrecondition(ExecutionPrecondition.newBuilder().setExpectedExecutionToken(staleToken))
                        .build();
                StopSandboxRequest missing = StopSandboxRequest.newBuilder()
                        .setRequestId(TestGateway.newRequestId())
                        .setTarget(TestGateway.byName("team", "missing-" + round))
                        .build();
                for (StopSandboxRequest stop : List.of(stale, missing)) {
                    CyclicBarrier together = new CyclicBarrier(2);
                    CompletableFuture<GrpcErrors.Failure> viaA = CompletableFuture.supplyAsync(
                            () -> failure(() -> {
                                together.await();
                                a.stub().stopSandbox(stop);
                            }),
                            threads);
                    CompletableFuture<GrpcErrors.Failure> viaB = CompletableFuture.supplyAsync(
                            () -> failure(() -> {
                                together.await();
                                b.stub().stopSandbox(stop);
                            }),
                            threads);
                    answers.add(List.of(viaA.get().reason(), viaB.get().reason()));
                }
            }

            assertThat(answers)
                    .hasSize(2 * ROUNDS)
                    .allSatisfy(pair -> assertThat(pair)
                            .isIn(
                                    List.of("STALE_EXECUTION", "STALE_EXECUTION"),
                                    List.of("SANDBOX_NOT_FOUND", "SANDBOX_NOT_FOUND")));
            assertThat(a.driver().calls(FakeDriver.Method.STOP)).isEqualTo(1);
            assertThat(b.driver().calls(FakeDriver.Method.STOP)).isZero();
        }
    }

    @Test
    @DisplayName("two different refused requests sent with one request_id to both replicas at once: one gets its"
            + " refusal, the other REQUEST_ID_REUSED, never INTERNAL")
    void reusedRequestIdOnTwoReplicasIsReused() throws Exception {
        String[] store = storeArgs();
        try (TestGateway a = TestGateway.start(
                        dir.resolve("a"), TestGateway.Transport.IN_PROCESS, FakeDriver.allCapabilities(), store);
                TestGateway b = TestGateway.start(
                        dir.resolve("b"), TestGateway.Transport.IN_PROCESS, FakeDriver.allCapabilities(), store);
                ExecutorService threads = Executors.newFixedThreadPool(2)) {
            List<List<String>> answers = new ArrayList<>();
            for (int round = 0; round < ROUNDS; round++) {
                String requestId = TestGateway.newRequestId();
                StopSandboxRequest viaA = StopSandboxRequest.newBuilder()
                        .setRequestId(requestId)
                        .setTarget(TestGateway.byName("team", "missing-a" + round))
                        .build();
                StopSandboxRequest viaB = viaA.toBuilder()
                        .setTarget(TestGateway.byName("team", "missing-b" + round))
                        .build();
                CyclicBarrier together = new CyclicBarrier(2);
                CompletableFuture<GrpcErrors.Failure> fromA = CompletableFuture.supplyAsync(
                        () -> failure(() -> {
                            together.await();
                            a.stub().stopSandbox(viaA);
                        }),
                        threads);
                CompletableFuture<GrpcErrors.Failure> fromB = CompletableFuture.supplyAsync(
                        () -> failure(() -> {
                            together.await();
                            b.stub().stopSandbox(viaB);
                        }),
                        threads);
                answers.add(List.of(fromA.get().reason(), fromB.get().reason()));
            }

            assertThat(answers)
                    .hasSize(ROUNDS)
                    .allSatisfy(pair -> assertThat(pair)
                            .isIn(
                                    List.of("SANDBOX_NOT_FOUND", "REQUEST_ID_REUSED"),
                                    List.of("REQUEST_ID_REUSED", "SANDBOX_NOT_FOUND")));
        }
    }
}
