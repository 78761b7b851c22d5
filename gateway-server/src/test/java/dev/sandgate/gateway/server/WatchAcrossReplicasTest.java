package dev.sandgate.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.WatchEventType;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import dev.sandgate.gateway.lifecycle.SandboxChange;
import dev.sandgate.gateway.lifecycle.WatchHub;
import dev.sandgate.gateway.store.ChangeLog;
import dev.sandgate.gateway.store.PostgresStore;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.gateway.testing.TestPostgres;
import dev.sandgate.gateway.testing.WatchClient;
import dev.sandgate.testing.EngineTest;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two gateway replicas on one PostgreSQL: a watch on either replica streams the changes made through the other, from
 * the store's change log, in order and once.
 */
@EngineTest
class WatchAcrossReplicasTest {
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
        Files.writeString(passwordFile, settings.password().orElse("unused"));
        Files.setPosixFilePermissions(passwordFile, PosixFilePermissions.fromString("rw-------"));
        return new String[] {
            "--store-url",
            settings.url(),
            "--store-user",
            settings.user(),
            "--store-password-file",
            passwordFile.toString(),
            "--token-key-file",
            dir.resolve("token-keys.properties").toString()
        };
    }

    private TestGateway replica(String name, String[] store) {
        return TestGateway.start(
                dir.resolve(name), TestGateway.Transport.IN_PROCESS, FakeDriver.allCapabilities(), store);
    }

    @Test
    @DisplayName("a watch on replica B sees the create, stop, start and delete done through replica A in order, each"
            + " resource version once and rising; a watch on A sees the same events, each once")
    void watchOnOneReplicaSeesTheOthersChangesInOrder() throws Exception {
        String[] store = storeArgs();
        try (TestGateway a = replica("a", store);
                TestGateway b = replica("b", store);
                WatchClient onA = new WatchClient(
                        a.asyncStub(),
                        WatchSandboxesRequest.newBuilder().setWorkspace("team").build());
                WatchClient onB = new WatchClient(
                        b.asyncStub(),
                        WatchSandboxesRequest.newBuilder().setWorkspace("team").build())) {
            assertThat(onA.snapshot()).isEmpty();
            assertThat(onB.snapshot()).isEmpty();

            String id = a.create("team", "shared").getId();
            a.stub()
                    .stopSandbox(StopSandboxRequest.newBuilder()
                            .setTarget(TestGateway.byId(id))
                            .build());
            a.stub()
                    .startSandbox(StartSandboxRequest.newBuilder()
                            .setTarget(TestGateway.byId(id))
                            .build());
            a.stub()
                    .deleteSandbox(DeleteSandboxRequest.newBuilder()
                            .setTarget(TestGateway.byId(id))
                            .build());
            // A change through B reaches A only through the log, after every earlier row of it: once A streams it,
            // A has streamed whatever the log holds for the first sandbox.
            String marker = b.create("team", "marker").getId();

            List<WatchSandboxesResponse> seenOnB = untilRemoved(onB, id);
            List<WatchSandboxesResponse> seenOnA = untilAdded(onA, marker);

            List<WatchSandboxesResponse> ofSandboxOnA = seenOnA.stream()
                    .filter(event -> event.getSandbox().getId().equals(id))
                    .toList();
            assertRisingOnce(seenOnB);
            assertThat(phases(seenOnB))
                    .containsSubsequence(Phase.PROVISIONING, Phase.READY, Phase.STOPPED, Phase.READY, Phase.DELETED);
            assertThat(seenOnB.getFirst().getType()).isEqualTo(WatchEventType.ADDED);
            assertThat(summary(ofSandboxOnA)).isEqualTo(summary(seenOnB));
        }
    }

    @Test
    @DisplayName("a replica whose change-log position was pruned before it read it ends its watch streams with"
            + " WATCH_OVERFLOW")
    void replicaBehindThePruningOverflowsItsWatches() throws Exception {
        String[] store = storeArgs();
        try (TestGateway a = replica("a", store);
                TestGateway b = replica("b", store);
                WatchClient onB = new WatchClient(
                        b.asyncStub(),
                        WatchSandboxesRequest.newBuilder().setWorkspace("team").build())) {
            assertThat(onB.snapshot()).isEmpty();
            // B's follower stops at the first change (its listeners run on its thread) until the log is pruned.
            CountDownLatch stalled = new CountDownLatch(1);
            CountDownLatch pruned = new CountDownLatch(1);
            WatchHub hub = b.gateway().lifecycle().hub();
            try (WatchHub.Registration unused = hub.register(change -> stall(change, stalled, pruned))) {
                a.create("team", "first");
                assertThat(stalled.await(30, TimeUnit.SECONDS)).isTrue();
                a.create("team", "second");
                try (PostgresStore direct = new PostgresStore(settings);
                        ChangeLog log = direct.openChangeLog()) {
                    assertThat(log.prune(Instant.now(), Duration.ZERO, 0)).isPositive();
                }
                pruned.countDown();

                Object end = onB.end();

                assertThat(end).isInstanceOf(StatusRuntimeException.class);
                GrpcErrors.Failure failure = GrpcErrors.read((StatusRuntimeException) end);
                assertThat(failure.code()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                assertThat(failure.reason()).isEqualTo("WATCH_OVERFLOW");
            }
        }
    }

    private static void stall(SandboxChange change, CountDownLatch stalled, CountDownLatch pruned) {
        if (change.type() == SandboxChange.Type.ADDED && stalled.getCount() > 0) {
            stalled.countDown();
            try {
                pruned.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The events about {@code id} up to and including its REMOVED. */
    private static List<WatchSandboxesResponse> untilRemoved(WatchClient watch, String id) throws InterruptedException {
        List<WatchSandboxesResponse> events = new ArrayList<>();
        while (true) {
            WatchSandboxesResponse event = watch.next();
            if (!event.getSandbox().getId().equals(id)) {
                continue;
            }
            events.add(event);
            if (event.getType() == WatchEventType.REMOVED) {
                return events;
            }
        }
    }

    /** Every event up to, not including, the ADDED of {@code id}. */
    private static List<WatchSandboxesResponse> untilAdded(WatchClient watch, String id) throws InterruptedException {
        List<WatchSandboxesResponse> events = new ArrayList<>();
        while (true) {
            WatchSandboxesResponse event = watch.next();
            if (event.getSandbox().getId().equals(id) && event.getType() == WatchEventType.ADDED) {
                return events;
            }
            events.add(event);
        }
    }

    /** Resource versions rise from event to event (the REMOVED carries the last one), each event once. */
    private static void assertRisingOnce(List<WatchSandboxesResponse> events) {
        Set<String> seen = new HashSet<>();
        long last = 0;
        for (WatchSandboxesResponse event : events) {
            long version = event.getSandbox().getResourceVersion();
            assertThat(seen.add(event.getType() + "/" + version))
                    .as("event seen once: %s", event)
                    .isTrue();
            if (event.getType() == WatchEventType.REMOVED) {
                assertThat(version).isGreaterThanOrEqualTo(last);
            } else {
                assertThat(version).as("resource version rises").isGreaterThan(last);
            }
            last = version;
        }
        assertThat(events.getLast().getType()).isEqualTo(WatchEventType.REMOVED);
        assertThat(events.stream().filter(e -> e.getType() == WatchEventType.REMOVED))
                .hasSize(1);
    }

    /** Each event's type, resource version and phase: what two replicas stream alike. */
    private static List<String> summary(List<WatchSandboxesResponse> events) {
        return events.stream()
                .map(e -> e.getType() + "/" + e.getSandbox().getResourceVersion() + "/"
                        + e.getSandbox().getPhase())
                .toList();
    }

    private static List<Phase> phases(List<WatchSandboxesResponse> events) {
        return events.stream().map(e -> e.getSandbox().getPhase()).toList();
    }
}
