package dev.sandgate.gateway.grpc;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static dev.sandgate.gateway.testing.TestGateway.byId;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.ExecutionPrecondition;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.WatchEventType;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.StartedGateway;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.gateway.testing.WatchClient;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;

/** WatchSandboxes, and the fencing of the driver's events. */
@ParameterizedClass
@EnumSource(TestGateway.Transport.class)
class WatchAndFencingTest {
    @Parameter
    TestGateway.Transport transport;

    @StartedGateway
    TestGateway gateway;

    private Sandbox get(String id) {
        return gateway.stub()
                .getSandbox(GetSandboxRequest.newBuilder().setTarget(byId(id)).build())
                .getSandbox();
    }

    private static SandboxRef ref(Sandbox sandbox) {
        return new SandboxRef(sandbox.getId(), sandbox.getWorkspace(), sandbox.getName());
    }

    private static SandboxObservation observation(Sandbox sandbox, long generation, SandboxState state) {
        return new SandboxObservation(
                ref(sandbox), generation, state, sandbox.getLaunchInput().getPolicyDigest(), Map.of(), "");
    }

    private void stopAndStart(String id) {
        gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder().setTarget(byId(id)).build());
        gateway.stub()
                .startSandbox(
                        StartSandboxRequest.newBuilder().setTarget(byId(id)).build());
    }

    @Test
    @DisplayName("a watch sends a snapshot of every matching sandbox, then SYNCED, then changes")
    void snapshotThenSyncedThenChanges() throws Exception {
        Sandbox a = gateway.create("team", "a");
        gateway.create("team", "b");
        gateway.create("elsewhere", "c");
        try (WatchClient watch = new WatchClient(
                gateway.asyncStub(),
                WatchSandboxesRequest.newBuilder().setWorkspace("team").build())) {
            List<WatchSandboxesResponse> snapshot = watch.snapshot();

            gateway.stub()
                    .stopSandbox(StopSandboxRequest.newBuilder()
                            .setTarget(byId(a.getId()))
                            .build());
            WatchSandboxesResponse stopped = watch.nextMatching(e ->
                    e.getType() == WatchEventType.MODIFIED && e.getSandbox().getPhase() == Phase.STOPPED);

            assertThat(snapshot).extracting(e -> e.getSandbox().getName()).containsExactly("a", "b");
            assertThat(snapshot).allSatisfy(e -> assertThat(e.getType()).isEqualTo(WatchEventType.SNAPSHOT));
            assertThat(stopped.getSandbox().getId()).isEqualTo(a.getId());
        }
    }

    @Test
    @DisplayName("each observation carries the token of the execution that produced it, even when it arrives late")
    void lateObservationCarriesItsOwnToken() throws Exception {
        Sandbox sandbox = gateway.create("team", "agent");
        String firstToken = sandbox.getCurrentExecution().getExecutionToken();
        stopAndStart(sandbox.getId());
        try (WatchClient watch = new WatchClient(gateway.asyncStub(), WatchSandboxesRequest.getDefaultInstance())) {
            watch.snapshot();

            gateway.driver().emit(new SandboxEvent.Snapshot(observation(sandbox, 1, SandboxState.RUNNING)));
            WatchSandboxesResponse late =
                    watch.nextMatching(e -> e.getObservation().getGeneration() == 1);

            assertThat(late.getObservation().getExecutionToken()).isEqualTo(firstToken);
            assertThat(late.getSandbox().getCurrentExecution().getGeneration()).isEqualTo(2);
            String observedToken = late.getObservation().getExecutionToken();
            assertThat(failure(() -> gateway.stub()
                                    .stopSandbox(StopSandboxRequest.newBuilder()
                                            .setTarget(byId(sandbox.getId()))
                                            .setPrecondition(ExecutionPrecondition.newBuilder()
                                                    .setExpectedExecutionToken(observedToken))
                                            .build()))
                            .reason())
                    .isEqualTo("STALE_EXECUTION");
            assertThat(get(sandbox.getId()).getPhase()).isEqualTo(Phase.READY);
        }
    }

    @Test
    @DisplayName("Get and Watch hand out the same token for the same execution")
    void getAndWatchAgreeOnTokens() throws Exception {
        Sandbox sandbox = gateway.create("team", "agent");
        try (WatchClient watch = new WatchClient(gateway.asyncStub(), WatchSandboxesRequest.getDefaultInstance())) {
            WatchSandboxesResponse snapshot = watch.snapshot().getFirst();

            assertThat(snapshot.getObservation().getExecutionToken())
                    .isEqualTo(get(sandbox.getId()).getCurrentExecution().getExecutionToken());
        }
    }

    @Test
    @DisplayName("an older generation's observation never regresses the newer execution")
    void olderGenerationNeverRegresses() throws Exception {
        Sandbox sandbox = gateway.create("team", "agent");
        stopAndStart(sandbox.getId());

        gateway.driver().emit(new SandboxEvent.Snapshot(observation(sandbox, 1, SandboxState.FAILED)));
        gateway.driver().emit(new SandboxEvent.Deleted(ref(sandbox), 1));

        Sandbox now = get(sandbox.getId());
        assertThat(now.getPhase()).isEqualTo(Phase.READY);
        assertThat(now.getCurrentExecution().getGeneration()).isEqualTo(2);
        assertThat(now.getConditionsList()).isEmpty();
    }

    @Test
    @DisplayName("an event for an unknown id creates nothing")
    void unknownIdCreatesNothing() {
        SandboxRef stranger = new SandboxRef(Identifiers.newSandboxId(), "team", "stranger");

        gateway.driver()
                .emit(new SandboxEvent.Snapshot(new SandboxObservation(
                        stranger, 1, SandboxState.RUNNING, "sha256:" + "0".repeat(64), Map.of(), "")));

        assertThat(gateway.stub()
                        .listSandboxes(ListSandboxesRequest.getDefaultInstance())
                        .getSandboxesCount())
                .isZero();
    }

    @Test
    @DisplayName("a deleted event removes nothing while a transition is pending")
    void deletedEventMidTransitionRemovesNothing() throws Exception {
        Sandbox sandbox = gateway.create("team", "agent");
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        gateway.driver().beforeEach(FakeDriver.Method.STOP, ref -> {
            entered.countDown();
            ConditionalStopTest.await(release);
        });
        CompletableFuture<?> stop = CompletableFuture.runAsync(() -> gateway.stub()
                .stopSandbox(StopSandboxRequest.newBuilder()
                        .setTarget(byId(sandbox.getId()))
                        .build()));
        assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();

        gateway.driver().emit(new SandboxEvent.Deleted(ref(sandbox), 1));
        release.countDown();
        stop.get(30, TimeUnit.SECONDS);

        Sandbox now = get(sandbox.getId());
        assertThat(now.getPhase()).isEqualTo(Phase.STOPPED);
        assertThat(now.getConditionsList()).isEmpty();
    }

    @Test
    @DisplayName("a resource removed behind the gateway's back is marked, not forgotten")
    void removedBehindTheBackIsMarked() {
        Sandbox sandbox = gateway.create("team", "agent");

        gateway.driver().removeBehindTheBack(sandbox.getId());
        gateway.driver().emit(new SandboxEvent.Deleted(ref(sandbox), 1));

        Sandbox now = get(sandbox.getId());
        assertThat(now.getPhase()).isEqualTo(Phase.ERROR);
        assertThat(now.getConditionsList())
                .anySatisfy(c -> assertThat(c.getType()).isEqualTo("RUNTIME_MISSING"));
    }

    @Test
    @DisplayName("an execution that ends by itself is observed as stopped")
    void exitIsObserved() {
        Sandbox sandbox = gateway.create("team", "agent");

        gateway.driver().exit(sandbox.getId());
        gateway.driver().emit(new SandboxEvent.Snapshot(observation(sandbox, 1, SandboxState.STOPPED)));

        assertThat(get(sandbox.getId()).getPhase()).isEqualTo(Phase.STOPPED);
    }

    @Test
    @DisplayName("a watch reports the deletion of a sandbox")
    void deletionIsWatched() throws Exception {
        Sandbox sandbox = gateway.create("team", "agent");
        try (WatchClient watch = new WatchClient(gateway.asyncStub(), WatchSandboxesRequest.getDefaultInstance())) {
            watch.snapshot();

            gateway.stub()
                    .deleteSandbox(dev.sandgate.api.v1.DeleteSandboxRequest.newBuilder()
                            .setTarget(byId(sandbox.getId()))
                            .build());

            WatchSandboxesResponse removed = watch.nextMatching(e -> e.getType() == WatchEventType.REMOVED);
            assertThat(removed.getSandbox().getId()).isEqualTo(sandbox.getId());
            assertThat(removed.getSandbox().getPhase()).isEqualTo(Phase.DELETED);
        }
    }
}
