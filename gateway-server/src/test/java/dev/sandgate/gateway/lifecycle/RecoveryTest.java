package dev.sandgate.gateway.lifecycle;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.sandgate.api.v1.DeleteOutcome;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.StartedGateway;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import io.grpc.Status;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** Start-up recovery and reconciliation, and the background completion of pending transitions. */
class RecoveryTest {
    @StartedGateway
    TestGateway gateway;

    private Sandbox get(String id) {
        return gateway.stub()
                .getSandbox(GetSandboxRequest.newBuilder().setTarget(byId(id)).build())
                .getSandbox();
    }

    @Test
    @DisplayName("a pending delete is completed at start-up and its request replays DELETED_NOW")
    void pendingDeleteCompletedAtStartUp() {
        Sandbox sandbox = gateway.create("team", "agent");
        gateway.driver().failEach(FakeDriver.Method.DELETE, new DriverException(DriverErrorCode.UNAVAILABLE, "down"));
        DeleteSandboxRequest delete = DeleteSandboxRequest.newBuilder()
                .setRequestId(TestGateway.newRequestId())
                .setTarget(byId(sandbox.getId()))
                .build();
        GrpcErrors.Failure pending = failure(() -> gateway.stub().deleteSandbox(delete));

        gateway.restart();

        assertThat(pending.reason()).isEqualTo("TRANSITION_PENDING");
        assertThat(failure(() -> get(sandbox.getId())).code()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(gateway.driver().list()).isEmpty();
        assertThat(gateway.stub().deleteSandbox(delete).getOutcome()).isEqualTo(DeleteOutcome.DELETED_NOW);
    }

    @Test
    @DisplayName("a pending transition is completed in the background without another request")
    void pendingTransitionCompletesInBackground() throws Exception {
        Sandbox sandbox = gateway.create("team", "agent");
        gateway.driver().failNext(FakeDriver.Method.STOP, new DriverException(DriverErrorCode.UNAVAILABLE, "down"));

        GrpcErrors.Failure pending = failure(() -> gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(sandbox.getId()))
                        .build()));

        assertThat(pending.code()).isEqualTo(Status.Code.UNAVAILABLE);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (get(sandbox.getId()).getPhase() != Phase.STOPPED && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertThat(get(sandbox.getId()).getPhase()).isEqualTo(Phase.STOPPED);
        assertThat(gateway.driver().calls(FakeDriver.Method.STOP)).isEqualTo(2);
    }

    @Test
    @DisplayName("at start-up a sandbox whose runtime resource vanished is marked RUNTIME_MISSING, not forgotten")
    void vanishedResourceIsMarked() {
        Sandbox sandbox = gateway.create("team", "agent");
        gateway.driver().removeBehindTheBack(sandbox.getId());

        gateway.restart();

        // The driver's first snapshot reconciles the store after start-up, in the background.
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            Sandbox now = get(sandbox.getId());
            assertThat(now.getPhase()).isEqualTo(Phase.ERROR);
            assertThat(now.getConditionsList())
                    .anySatisfy(c -> assertThat(c.getType()).isEqualTo("RUNTIME_MISSING"));
        });
    }

    @Test
    @DisplayName("at start-up a resource of this gateway without a record is reported and not adopted")
    void unmanagedResourceIsReported() {
        gateway.create("team", "agent");
        SandboxRef stranger = new SandboxRef(Identifiers.newSandboxId(), "team", "stranger");
        gateway.driver().plant(stranger, 3, "sha256:" + "1".repeat(64));

        gateway.restart();

        await().atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertThat(gateway.gateway().lifecycle().unmanagedResources())
                        .extracting(SandboxObservation::ref)
                        .containsExactly(stranger));
        assertThat(gateway.stub()
                        .listSandboxes(ListSandboxesRequest.getDefaultInstance())
                        .getSandboxesList())
                .extracting(Sandbox::getName)
                .containsExactly("agent");
    }

    @Test
    @DisplayName("no lock entries are left behind after operations finish")
    void locksDoNotLeak() {
        Sandbox sandbox = gateway.create("team", "agent");
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(sandbox.getId()))
                        .build());
        gateway.stub()
                .deleteSandbox(DeleteSandboxRequest.newBuilder()
                        .setTarget(byId(sandbox.getId()))
                        .build());

        assertThat(gateway.gateway().lifecycle().lockEntries()).isZero();
    }
}
