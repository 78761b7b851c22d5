package dev.sandgate.gateway.lifecycle;

import static dev.sandgate.gateway.testing.TestGateway.byId;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.store.SandboxPhase;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.TestGateway;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** An operation that cannot get a busy sandbox's turn within its deadline records nothing. */
class BusySandboxTest {
    @TempDir
    Path root;

    @Test
    @DisplayName("a start that times out waiting for a busy sandbox is SANDBOX_BUSY and claims no generation")
    void timedOutWaitRecordsNothing() throws Exception {
        try (TestGateway gateway = TestGateway.start(root, TestGateway.Transport.IN_PROCESS)) {
            Sandbox created = gateway.create("team", "agent");
            CountDownLatch entered = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            gateway.driver().holdEach(FakeDriver.Method.STOP, entered, release);
            CompletableFuture<?> stop = CompletableFuture.runAsync(() -> gateway.stub()
                    .stopSandbox(StopSandboxRequest.newBuilder()
                            .setTarget(byId(created.getId()))
                            .build()));
            assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
            Lifecycle lifecycle = gateway.gateway().lifecycle();
            Commands.Start start = new Commands.Start(
                    new Commands.RequestMeta(Optional.of(TestGateway.newRequestId()), "sha256:x"),
                    Commands.Target.byId(created.getId()),
                    false);

            assertThatThrownBy(() -> lifecycle.start(start, Duration.ofMillis(200)))
                    .isInstanceOfSatisfying(
                            GatewayException.class, e -> assertThat(e.reason()).isEqualTo(ErrorReason.SANDBOX_BUSY));
            release.countDown();
            stop.get(30, TimeUnit.SECONDS);

            assertThat(gateway.driver().calls(FakeDriver.Method.START)).isZero();
            var sandbox = lifecycle.get(Commands.Target.byId(created.getId()));
            assertThat(sandbox.generation()).isEqualTo(1);
            assertThat(sandbox.phase()).isEqualTo(SandboxPhase.STOPPED);
            assertThatThrownBy(
                            () -> lifecycle.operation(start.meta().requestId().orElseThrow()))
                    .isInstanceOfSatisfying(
                            GatewayException.class,
                            e -> assertThat(e.reason()).isEqualTo(ErrorReason.OPERATION_NOT_FOUND));
        }
    }
}
