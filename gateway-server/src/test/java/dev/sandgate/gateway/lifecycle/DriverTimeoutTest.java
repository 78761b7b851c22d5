package dev.sandgate.gateway.lifecycle;

import static dev.sandgate.gateway.testing.TestGateway.byId;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StopOutcome;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.StopSandboxResponse;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.spi.DriverCapabilities;
import io.grpc.Status;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A driver call that outlasts the driver timeout: the caller hears TRANSITION_PENDING at the timeout, the transition
 * stays recorded, and the gateway completes it once the driver answers again.
 */
class DriverTimeoutTest {
    @TempDir
    Path root;

    @Test
    @DisplayName("a stop whose driver call hangs answers TRANSITION_PENDING at the timeout and is completed later")
    void lateDriverCallAnswersPendingAndTheStopIsCompletedLater() throws Exception {
        try (TestGateway gateway = startWithShortDriverTimeout()) {
            HeldStops held = createWithHeldStops(gateway);
            Sandbox created = held.sandbox();
            CountDownLatch release = held.release();
            StopSandboxRequest stop = stopWithRequestId(created);

            // The driver is held until after this answer, so the answer came from the driver timeout.
            GrpcErrors.Failure pending = failedStop(gateway, stop, 20);

            assertThat(held.entered().await(0, TimeUnit.SECONDS)).isTrue();
            assertThat(pending.code()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(pending.reason()).isEqualTo("TRANSITION_PENDING");

            release.countDown();
            StopSandboxResponse replay = awaitReplay(gateway, stop);
            assertThat(replay.getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
            assertThat(replay.getReplayed()).isTrue();
            assertThat(gateway.stub()
                            .getSandbox(GetSandboxRequest.newBuilder()
                                    .setTarget(byId(created.getId()))
                                    .build())
                            .getSandbox()
                            .getPhase())
                    .isEqualTo(Phase.STOPPED);
        }
    }

    @Test
    @DisplayName("an overdue stop's late result is committed as it comes, without a second driver call")
    void overdueStopKeepsItsLateResult() throws Exception {
        try (TestGateway gateway = startWithShortDriverTimeout()) {
            HeldStops held = createWithHeldStops(gateway);
            Sandbox created = held.sandbox();
            CountDownLatch release = held.release();
            StopSandboxRequest stop = stopWithRequestId(created);

            GrpcErrors.Failure pending = failedStop(gateway, stop, 20);
            release.countDown();
            StopSandboxResponse replay = awaitReplay(gateway, stop);

            assertThat(pending.reason()).isEqualTo("TRANSITION_PENDING");
            assertThat(replay.getOutcome()).isEqualTo(StopOutcome.STOPPED_NOW);
            assertThat(gateway.driver().calls(FakeDriver.Method.STOP))
                    .as("the one driver call's answer completed the stop")
                    .isEqualTo(1);
        }
    }

    @Test
    @DisplayName("while a driver call overruns the timeout, another operation on the sandbox waits instead of calling"
            + " the driver alongside it")
    void overdueDriverCallKeepsTheSandboxSerialized() throws Exception {
        try (TestGateway gateway = startWithShortDriverTimeout()) {
            HeldStops held = createWithHeldStops(gateway);
            Sandbox created = held.sandbox();
            CountDownLatch release = held.release();
            StopSandboxRequest stop = StopSandboxRequest.newBuilder()
                    .setTarget(byId(created.getId()))
                    .build();

            GrpcErrors.Failure first = failedStop(gateway, stop, 20);
            GrpcErrors.Failure second = failedStop(gateway, stop, 1);
            int stopsWhileHeld = gateway.driver().calls(FakeDriver.Method.STOP);
            release.countDown();

            assertThat(first.reason()).isEqualTo("TRANSITION_PENDING");
            assertThat(second.code())
                    .as("the second stop waited for the sandbox until its deadline")
                    .isEqualTo(Status.Code.DEADLINE_EXCEEDED);
            assertThat(stopsWhileHeld).isEqualTo(1);
            assertThat(awaitPhase(gateway, created.getId(), Phase.STOPPED)).isEqualTo(Phase.STOPPED);
        }
    }

    private static Phase awaitPhase(TestGateway gateway, String id, Phase wanted) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        Phase phase;
        do {
            phase = gateway.stub()
                    .getSandbox(
                            GetSandboxRequest.newBuilder().setTarget(byId(id)).build())
                    .getSandbox()
                    .getPhase();
            if (phase == wanted) {
                return phase;
            }
            Thread.sleep(20);
        } while (System.nanoTime() < deadline);
        return phase;
    }

    /** A created sandbox whose driver stops hang (counting {@code entered} down) until {@code release} opens. */
    private record HeldStops(Sandbox sandbox, CountDownLatch entered, CountDownLatch release) {}

    /** How {@code stop} fails, with a deadline of {@code seconds}. */
    private static GrpcErrors.Failure failedStop(TestGateway gateway, StopSandboxRequest stop, int seconds) {
        return GrpcErrors.failure(() ->
                gateway.stub().withDeadlineAfter(seconds, TimeUnit.SECONDS).stopSandbox(stop));
    }

    /** A stop of {@code sandbox} by id, with a new request_id so that its result can be replayed. */
    private static StopSandboxRequest stopWithRequestId(Sandbox sandbox) {
        return StopSandboxRequest.newBuilder()
                .setTarget(byId(sandbox.getId()))
                .setRequestId(TestGateway.newRequestId())
                .build();
    }

    private static HeldStops createWithHeldStops(TestGateway gateway) {
        Sandbox created = gateway.create("team", "agent");
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        gateway.driver().holdEach(FakeDriver.Method.STOP, entered, release);
        return new HeldStops(created, entered, release);
    }

    /** A gateway over real Netty whose driver calls time out after 300 ms. */
    private TestGateway startWithShortDriverTimeout() {
        DriverCapabilities all = FakeDriver.allCapabilities();
        return TestGateway.start(root, TestGateway.Transport.NETTY, all, "--driver-timeout", "300ms");
    }

    /** Retries the stop with its request_id until the pending stop's result is recorded. */
    private static StopSandboxResponse awaitReplay(TestGateway gateway, StopSandboxRequest stop)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                return gateway.stub().withDeadlineAfter(10, TimeUnit.SECONDS).stopSandbox(stop);
            } catch (io.grpc.StatusRuntimeException e) {
                GrpcErrors.Failure failure = GrpcErrors.read(e);
                assertThat(failure.reason())
                        .as("only a pending transition is retried")
                        .isIn("TRANSITION_PENDING", "SANDBOX_BUSY", "");
                assertThat(System.nanoTime()).as("recorded in time").isLessThan(deadline);
                Thread.sleep(50);
            }
        }
    }
}
