package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static dev.sandgate.gateway.testing.TestGateway.byName;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.SandboxTarget;
import dev.sandgate.api.v1.StartOutcome;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StartSandboxResponse;
import dev.sandgate.api.v1.StopOutcome;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.StopSandboxResponse;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import io.grpc.Status;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/** Generations, addressing and the per-sandbox serialization of lifecycle operations. */
@ParameterizedClass
@EnumSource(TestGateway.Transport.class)
class LifecycleTest {
    @Parameter
    TestGateway.Transport transport;

    @TempDir
    Path root;

    TestGateway gateway;

    @BeforeEach
    void start() {
        gateway = TestGateway.start(root, transport);
    }

    @AfterEach
    void stop() {
        gateway.close();
    }

    private Sandbox get(SandboxTarget target) {
        return gateway.stub()
                .getSandbox(GetSandboxRequest.newBuilder().setTarget(target).build())
                .getSandbox();
    }

    private StopSandboxResponse stopSandbox(String id) {
        return gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder().setTarget(byId(id)).build());
    }

    private StartSandboxResponse startSandbox(String id) {
        return gateway.stub()
                .startSandbox(
                        StartSandboxRequest.newBuilder().setTarget(byId(id)).build());
    }

    @Test
    @DisplayName("create assigns an id, generation 1 and a token, and reports the driver's state")
    void createAssignsGenerationOne() {
        CreateSandboxResponse response = gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "agent")
                        .putLabels("app", "demo")
                        .build());

        Sandbox sandbox = response.getSandbox();
        assertThat(sandbox.getId()).matches("[0-9a-f-]{36}");
        assertThat(sandbox.getCurrentExecution().getGeneration()).isEqualTo(1);
        assertThat(sandbox.getCurrentExecution().getExecutionToken()).startsWith("sgx1.");
        assertThat(sandbox.getPhase()).isEqualTo(Phase.READY);
        assertThat(sandbox.getLabelsMap()).containsEntry("app", "demo");
        assertThat(sandbox.getDriver()).isEqualTo("fake");
        assertThat(get(byName("team", "agent")).getCurrentExecution().getExecutionToken())
                .isEqualTo(sandbox.getCurrentExecution().getExecutionToken());
    }

    @Test
    @DisplayName("start on a running sandbox mints nothing and answers already running")
    void startOnRunningMintsNothing() {
        Sandbox created = gateway.create("team", "agent");

        StartSandboxResponse response = startSandbox(created.getId());

        assertThat(response.getOutcome()).isEqualTo(StartOutcome.ALREADY_RUNNING);
        assertThat(response.getExecution().getGeneration()).isEqualTo(1);
        assertThat(gateway.driver().calls(FakeDriver.Method.START)).isZero();
    }

    @Test
    @DisplayName("each claimed start mints the next generation with a new token")
    void startMintsNextGeneration() {
        Sandbox created = gateway.create("team", "agent");
        stopSandbox(created.getId());

        StartSandboxResponse response = startSandbox(created.getId());

        assertThat(response.getOutcome()).isEqualTo(StartOutcome.LAUNCHED);
        assertThat(response.getExecution().getGeneration()).isEqualTo(2);
        assertThat(response.getExecution().getExecutionToken())
                .isNotEqualTo(created.getCurrentExecution().getExecutionToken());
    }

    @Test
    @DisplayName("a generation is never reused, even after a failed launch")
    void failedLaunchConsumesGeneration() {
        Sandbox created = gateway.create("team", "agent");
        stopSandbox(created.getId());
        gateway.driver().failNext(FakeDriver.Method.START, new DriverException(DriverErrorCode.INTERNAL, "boom"));

        GrpcErrors.Failure failed = failure(() -> startSandbox(created.getId()));
        Sandbox afterFailure = get(byId(created.getId()));
        StartSandboxResponse retried = startSandbox(created.getId());

        assertThat(failed.code()).isEqualTo(Status.Code.INTERNAL);
        assertThat(failed.reason()).isEqualTo("DRIVER_INTERNAL");
        assertThat(afterFailure.getPhase()).isEqualTo(Phase.ERROR);
        assertThat(afterFailure.getConditionsList())
                .anySatisfy(c -> assertThat(c.getType()).isEqualTo("LAST_OPERATION_FAILED"));
        assertThat(retried.getExecution().getGeneration()).isEqualTo(3);
    }

    @Test
    @DisplayName("100 concurrent stops of one sandbox make exactly one driver stop")
    void hundredConcurrentStopsMakeOneDriverStop() throws Exception {
        Sandbox created = gateway.create("team", "agent");
        ExecutorService clients = Executors.newFixedThreadPool(100);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<CompletableFuture<StopSandboxResponse>> stops = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                stops.add(CompletableFuture.supplyAsync(
                        () -> {
                            ConditionalStopTest.await(go);
                            return stopSandbox(created.getId());
                        },
                        clients));
            }
            go.countDown();

            List<StopOutcome> outcomes = new ArrayList<>();
            for (CompletableFuture<StopSandboxResponse> stop : stops) {
                outcomes.add(stop.get(60, TimeUnit.SECONDS).getOutcome());
            }

            assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isEqualTo(1);
            assertThat(outcomes).containsOnlyOnce(StopOutcome.STOPPED_NOW);
            assertThat(outcomes)
                    .filteredOn(o -> o == StopOutcome.ALREADY_STOPPED)
                    .hasSize(99);
        } finally {
            clients.shutdownNow();
        }
    }

    @Test
    @DisplayName("operations on different sandboxes run concurrently")
    void differentSandboxesRunConcurrently() throws Exception {
        Sandbox blocked = gateway.create("team", "blocked");
        Sandbox free = gateway.create("team", "free");
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        gateway.driver().beforeEach(FakeDriver.Method.STOP, ref -> {
            if (ref.id().equals(blocked.getId())) {
                entered.countDown();
                ConditionalStopTest.await(release);
            }
        });
        CompletableFuture<StopSandboxResponse> slow = CompletableFuture.supplyAsync(() -> stopSandbox(blocked.getId()));
        assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();

        StopSandboxResponse fast = stopSandbox(free.getId());

        assertThat(fast.getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
        assertThat(slow).isNotDone();
        release.countDown();
        assertThat(slow.get(30, TimeUnit.SECONDS).getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
    }

    @Test
    @DisplayName("an operation on a busy sandbox waits its turn within the caller's deadline")
    void busySandboxHonoursDeadline() throws Exception {
        Sandbox created = gateway.create("team", "agent");
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        gateway.driver().beforeEach(FakeDriver.Method.STOP, ref -> {
            entered.countDown();
            ConditionalStopTest.await(release);
        });
        CompletableFuture<StopSandboxResponse> first =
                CompletableFuture.supplyAsync(() -> stopSandbox(created.getId()));
        assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();

        GrpcErrors.Failure busy = failure(() -> gateway.stub()
                .withDeadlineAfter(300, TimeUnit.MILLISECONDS)
                .startSandbox(StartSandboxRequest.newBuilder()
                        .setTarget(byId(created.getId()))
                        .build()));
        release.countDown();

        // The server's copy of the deadline ends a little later than the client's (it counts from arrival), so
        // whether the start ran after the stop is not asserted here; BusySandboxTest shows nothing is recorded
        // when the wait times out.
        assertThat(busy.code()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
        assertThat(first.get(30, TimeUnit.SECONDS).getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
    }

    @Test
    @DisplayName("the id is authoritative: an id with the name of another sandbox is SANDBOX_ID_MISMATCH")
    void idWithOtherNameIsMismatch() {
        Sandbox agent = gateway.create("team", "agent");
        gateway.create("team", "other");

        GrpcErrors.Failure failure = failure(() -> stopSandboxTarget(SandboxTarget.newBuilder()
                .setId(agent.getId())
                .setWorkspace("team")
                .setName("other")
                .build()));

        assertThat(failure.code()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(failure.reason()).isEqualTo("SANDBOX_ID_MISMATCH");
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isZero();
    }

    @Test
    @DisplayName("an absent id never falls back to a sandbox with the same name")
    void absentIdNeverFallsBackToName() {
        gateway.create("team", "agent");
        String absent = "00000000-0000-4000-8000-00000000abcd";

        GrpcErrors.Failure withName = failure(() -> stopSandboxTarget(SandboxTarget.newBuilder()
                .setId(absent)
                .setWorkspace("team")
                .setName("agent")
                .build()));
        GrpcErrors.Failure idOnly = failure(() -> stopSandboxTarget(byId(absent)));

        assertThat(withName.reason()).isEqualTo("SANDBOX_ID_MISMATCH");
        assertThat(idOnly.code()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isZero();
    }

    private StopSandboxResponse stopSandboxTarget(SandboxTarget target) {
        return gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder().setTarget(target).build());
    }

    @Test
    @DisplayName("a name is unique within its workspace, and may repeat in another workspace")
    void namesAreUniquePerWorkspace() {
        gateway.create("team", "agent");

        GrpcErrors.Failure duplicate = failure(() -> gateway.create("team", "agent"));
        Sandbox elsewhere = gateway.create("other-team", "agent");

        assertThat(duplicate.code()).isEqualTo(Status.Code.ALREADY_EXISTS);
        assertThat(duplicate.reason()).isEqualTo("SANDBOX_ALREADY_EXISTS");
        assertThat(elsewhere.getWorkspace()).isEqualTo("other-team");
    }

    @Test
    @DisplayName("bad input is INVALID_ARGUMENT naming the field, and nothing is written")
    void badInputNamesTheField() {
        assertThat(failure(() -> gateway.create("team", "Agent_1")).field()).contains("name");
        assertThat(failure(() -> gateway.create("", "agent")).field()).contains("workspace");
        assertThat(failure(() -> gateway.stub()
                                .createSandbox(TestGateway.createRequest("team", "agent")
                                        .putLabels("sandgate.dev/sandbox-id", "spoofed")
                                        .build()))
                        .field())
                .contains("labels[sandgate.dev/sandbox-id]");
        assertThat(failure(() -> gateway.stub()
                                .createSandbox(TestGateway.createRequest("team", "agent")
                                        .putLabels("Bad Key", "x")
                                        .build()))
                        .field())
                .contains("labels[Bad Key]");
        assertThat(failure(() -> gateway.stub()
                                .createSandbox(TestGateway.createRequest("team", "agent")
                                        .setSpec(TestGateway.busybox().toBuilder()
                                                .putEnvironment("1BAD", "x"))
                                        .build()))
                        .field())
                .contains("spec.environment[1BAD]");
        assertThat(failure(() -> gateway.stub()
                                .createSandbox(TestGateway.createRequest("team", "agent")
                                        .clearSpec()
                                        .build()))
                        .field())
                .contains("spec");
        assertThat(failure(() -> stopSandboxTarget(byId("NOT-A-UUID"))).field()).contains("target.id");
        assertThat(failure(() -> stopSandboxTarget(SandboxTarget.getDefaultInstance()))
                        .field())
                .contains("target");
        assertThat(failure(() -> gateway.stub()
                                .createSandbox(TestGateway.createRequest("team", "agent")
                                        .setSpec(TestGateway.busybox().toBuilder()
                                                .setImage("invalid/image"))
                                        .build()))
                        .field())
                .contains("spec.image");
        assertThat(gateway.driver().calls(FakeDriver.Method.CREATE)).isZero();
        assertThat(gateway.stub()
                        .listSandboxes(dev.sandgate.api.v1.ListSandboxesRequest.getDefaultInstance())
                        .getSandboxesCount())
                .isZero();
    }

    @Test
    @DisplayName("environment values are accepted but never returned")
    void environmentValuesAreNotReturned() {
        Sandbox sandbox = gateway.stub()
                .createSandbox(TestGateway.createRequest("team", "agent")
                        .setSpec(TestGateway.busybox().toBuilder().putEnvironment("API_KEY", "s3cr3t-value"))
                        .build())
                .getSandbox();

        assertThat(sandbox.getEnvironmentNamesList()).containsExactly("API_KEY");
        assertThat(sandbox.toString()).doesNotContain("s3cr3t-value");
    }

    @Test
    @DisplayName("a driver call that times out leaves the transition pending; a retry with the request id completes it")
    void timedOutDriverCallStaysPending() throws Exception {
        gateway.close();
        gateway = TestGateway.start(root, transport, FakeDriver.allCapabilities(), "--driver-timeout", "300ms");
        Sandbox created = gateway.create("team", "agent");
        CountDownLatch release = new CountDownLatch(1);
        gateway.driver().beforeEach(FakeDriver.Method.STOP, ref -> ConditionalStopTest.await(release));
        String requestId = TestGateway.newRequestId();
        StopSandboxRequest request = StopSandboxRequest.newBuilder()
                .setRequestId(requestId)
                .setTarget(byId(created.getId()))
                .build();

        GrpcErrors.Failure pending = failure(() -> gateway.stub().stopSandbox(request));
        Sandbox during = get(byId(created.getId()));
        release.countDown();
        gateway.driver().clearHooks();
        StopSandboxResponse retried = gateway.stub().stopSandbox(request);

        assertThat(pending.code()).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(pending.reason()).isEqualTo("TRANSITION_PENDING");
        assertThat(during.getPhase()).isEqualTo(Phase.STOPPING);
        assertThat(retried.getReplayed()).isTrue();
        assertThat(retried.getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
        assertThat(get(byId(created.getId())).getPhase()).isEqualTo(Phase.STOPPED);
    }

    @Test
    @DisplayName("another operation that finds a transition pending finishes it first, then decides on its result")
    void operationFinishesAPendingTransitionFirst() throws Exception {
        gateway.close();
        gateway = TestGateway.start(root, transport, FakeDriver.allCapabilities(), "--driver-timeout", "300ms");
        Sandbox created = gateway.create("team", "agent");
        CountDownLatch release = new CountDownLatch(1);
        gateway.driver().beforeEach(FakeDriver.Method.STOP, ref -> ConditionalStopTest.await(release));
        StopSandboxRequest first = StopSandboxRequest.newBuilder()
                .setRequestId(TestGateway.newRequestId())
                .setTarget(byId(created.getId()))
                .build();
        GrpcErrors.Failure pending = failure(() -> gateway.stub().stopSandbox(first));
        release.countDown();
        gateway.driver().clearHooks();

        StopSandboxResponse second = stopSandbox(created.getId());

        assertThat(pending.reason()).isEqualTo("TRANSITION_PENDING");
        assertThat(second.getOutcome())
                .as("the pending stop was finished before the second stop decided")
                .isEqualTo(StopOutcome.ALREADY_STOPPED);
        assertThat(gateway.stub().stopSandbox(first).getOutcome())
                .as("the first request's own result")
                .isEqualTo(StopOutcome.STOPPED_NOW);
        assertThat(get(byId(created.getId())).getPhase()).isEqualTo(Phase.STOPPED);
    }

    @Test
    @DisplayName("a cancelled client call does not strand its transition")
    void cancelledCallCompletesItsTransition() throws Exception {
        Sandbox created = gateway.create("team", "agent");
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        gateway.driver().beforeEach(FakeDriver.Method.STOP, ref -> {
            entered.countDown();
            ConditionalStopTest.await(release);
        });
        io.grpc.Context.CancellableContext context = io.grpc.Context.current().withCancellation();
        CompletableFuture<GrpcErrors.Failure> call = CompletableFuture.supplyAsync(() -> {
            java.util.concurrent.atomic.AtomicReference<GrpcErrors.Failure> result =
                    new java.util.concurrent.atomic.AtomicReference<>();
            context.run(() -> result.set(failure(() -> stopSandbox(created.getId()))));
            return result.get();
        });
        assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();

        context.cancel(null);
        assertThat(call.get(30, TimeUnit.SECONDS).code()).isEqualTo(Status.Code.CANCELLED);
        release.countDown();

        assertThat(eventually(() -> get(byId(created.getId())).getPhase() == Phase.STOPPED))
                .isTrue();
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isEqualTo(1);
    }

    /** Polls {@code condition} until it holds or 30 s pass. */
    static boolean eventually(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(20);
        }
        return condition.getAsBoolean();
    }
}
