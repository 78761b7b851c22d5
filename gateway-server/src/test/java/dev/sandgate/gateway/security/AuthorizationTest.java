package dev.sandgate.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.GetOperationRequest;
import dev.sandgate.api.v1.GetSandboxPolicyRequest;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.SandboxTarget;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyRequest;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import dev.sandgate.gateway.testing.TestGateway;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Function;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/** Per-workspace authorization over real TLS: refusals reveal nothing and write nothing; watches stay in bounds. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AuthorizationTest {
    private SecureGateway gateway;
    private SandboxServiceGrpc.SandboxServiceBlockingStub alice;
    private SandboxServiceGrpc.SandboxServiceBlockingStub bob;
    private SandboxServiceGrpc.SandboxServiceBlockingStub carol;

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        gateway = SecureGateway.start(dir);
        alice = gateway.stub(gateway.jwt("alice"));
        bob = gateway.stub(gateway.jwt("bob"));
        carol = gateway.stub(gateway.jwt("carol"));
    }

    @AfterAll
    void stop() {
        if (gateway != null) { // null when its start was skipped (no PostgreSQL for a PostgreSQL run)
            gateway.close();
        }
    }

    private static String unique(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    private static StatusRuntimeException refusal(Supplier<?> call) {
        try {
            var unused = call.get();
        } catch (StatusRuntimeException e) {
            return e;
        }
        throw new AssertionError("the call succeeded");
    }

    @Test
    @DisplayName("every method on another workspace's sandbox is PERMISSION_DENIED, writes nothing, reveals nothing")
    void everyMethodOfAnotherWorkspaceIsDenied() {
        Sandbox sandbox = alice.createSandbox(
                        TestGateway.createRequest("team-a", unique("a")).build())
                .getSandbox();
        SandboxTarget byName = TestGateway.byName("team-a", sandbox.getName());
        SandboxTarget byId = TestGateway.byId(sandbox.getId());
        String missingId = UUID.randomUUID().toString();
        String requestId = TestGateway.newRequestId();

        Map<String, Function<SandboxTarget, Object>> calls = Map.of(
                "GetSandbox",
                        t -> bob.getSandbox(
                                GetSandboxRequest.newBuilder().setTarget(t).build()),
                "GetSandboxPolicy",
                        t -> bob.getSandboxPolicy(GetSandboxPolicyRequest.newBuilder()
                                .setTarget(t)
                                .build()),
                "StopSandbox",
                        t -> bob.stopSandbox(StopSandboxRequest.newBuilder()
                                .setRequestId(requestId)
                                .setTarget(t)
                                .build()),
                "StartSandbox",
                        t -> bob.startSandbox(StartSandboxRequest.newBuilder()
                                .setRequestId(requestId)
                                .setTarget(t)
                                .build()),
                "DeleteSandbox",
                        t -> bob.deleteSandbox(DeleteSandboxRequest.newBuilder()
                                .setRequestId(requestId)
                                .setTarget(t)
                                .build()),
                "UpdateSandboxPolicy",
                        t -> bob.updateSandboxPolicy(UpdateSandboxPolicyRequest.newBuilder()
                                .setRequestId(requestId)
                                .setTarget(t)
                                .setDocument("{}")
                                .build()));
        for (var call : calls.entrySet()) {
            StatusRuntimeException existing = refusal(() -> call.getValue().apply(byId));
            StatusRuntimeException missing = refusal(() -> call.getValue().apply(TestGateway.byId(missingId)));
            StatusRuntimeException named = refusal(() -> call.getValue().apply(byName));
            for (StatusRuntimeException e : List.of(existing, missing, named)) {
                assertThat(e.getStatus().getCode()).as(call.getKey()).isEqualTo(Status.Code.PERMISSION_DENIED);
                assertThat(e.getStatus().getDescription())
                        .as(call.getKey())
                        .doesNotContain(sandbox.getId())
                        .doesNotContain(sandbox.getName());
            }
            // A sandbox that exists and one that does not are refused alike.
            assertThat(existing.getStatus().getDescription())
                    .as(call.getKey())
                    .isEqualTo(missing.getStatus().getDescription());
        }
        assertThat(refusal(() -> bob.createSandbox(
                                TestGateway.createRequest("team-a", unique("b")).build()))
                        .getStatus()
                        .getCode())
                .isEqualTo(Status.Code.PERMISSION_DENIED);
        assertThat(refusal(() -> bob.listSandboxes(ListSandboxesRequest.newBuilder()
                                .setWorkspace("team-a")
                                .build()))
                        .getStatus()
                        .getCode())
                .isEqualTo(Status.Code.PERMISSION_DENIED);
        assertThat(refusal(() -> bob.watchSandboxes(WatchSandboxesRequest.newBuilder()
                                        .setWorkspace("team-a")
                                        .build())
                                .hasNext())
                        .getStatus()
                        .getCode())
                .isEqualTo(Status.Code.PERMISSION_DENIED);

        // Nothing was written: the sandbox is as it was, team-a holds only what alice made, no request was recorded.
        Sandbox after = alice.getSandbox(
                        GetSandboxRequest.newBuilder().setTarget(byId).build())
                .getSandbox();
        assertThat(after.getResourceVersion()).isEqualTo(sandbox.getResourceVersion());
        assertThat(after.getPhase()).isEqualTo(sandbox.getPhase());
        assertThat(alice.listSandboxes(ListSandboxesRequest.newBuilder()
                                .setWorkspace("team-a")
                                .build())
                        .getSandboxesList())
                .allSatisfy(s -> assertThat(s.getName()).doesNotStartWith("b-"));
        assertThat(refusal(() -> bob.getOperation(GetOperationRequest.newBuilder()
                                .setRequestId(requestId)
                                .build()))
                        .getStatus()
                        .getCode())
                .isEqualTo(Status.Code.NOT_FOUND);
    }

    @Test
    @DisplayName("a list without a workspace is narrowed to the principal's one workspace")
    void listWithoutWorkspaceShowsOnlyTheOwnWorkspace() {
        alice.createSandbox(TestGateway.createRequest("team-a", unique("a")).build());
        bob.createSandbox(TestGateway.createRequest("team-b", unique("b")).build());
        assertThat(bob.listSandboxes(ListSandboxesRequest.getDefaultInstance()).getSandboxesList())
                .isNotEmpty()
                .allSatisfy(s -> assertThat(s.getWorkspace()).isEqualTo("team-b"));
    }

    @Test
    @DisplayName("a watch of all workspaces never delivers another workspace's events")
    void watchNeverDeliversAnotherWorkspace() {
        alice.createSandbox(TestGateway.createRequest("team-a", unique("a")).build());
        ConcurrentLinkedQueue<WatchSandboxesResponse> events = new ConcurrentLinkedQueue<>();
        var call = SecureGateway.withBearer(SandboxServiceGrpc.newStub(bobChannel()), bobToken());
        var context = io.grpc.Context.current().withCancellation();
        context.run(() -> call.watchSandboxes(WatchSandboxesRequest.getDefaultInstance(), new StreamObserver<>() {
            @Override
            public void onNext(WatchSandboxesResponse value) {
                events.add(value);
            }

            @Override
            public void onError(Throwable t) {}

            @Override
            public void onCompleted() {}
        }));
        try {
            await().atMost(Duration.ofSeconds(30))
                    .until(() ->
                            events.stream().anyMatch(e -> e.getType() == dev.sandgate.api.v1.WatchEventType.SYNCED));
            alice.createSandbox(TestGateway.createRequest("team-a", unique("a")).build());
            String last = unique("b");
            bob.createSandbox(TestGateway.createRequest("team-b", last).build());
            // Events arrive in order: once bob's last sandbox is seen, alice's earlier one would have been too.
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> events.stream()
                            .anyMatch(e -> e.getSandbox().getName().equals(last)));
            assertThat(events)
                    .filteredOn(WatchSandboxesResponse::hasSandbox)
                    .isNotEmpty()
                    .allSatisfy(e -> assertThat(e.getSandbox().getWorkspace()).isEqualTo("team-b"));
        } finally {
            context.cancel(null);
        }
    }

    private io.grpc.ManagedChannel bobChannel() {
        try {
            return gateway.channel();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private String bobToken() {
        try {
            return gateway.jwt("bob");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    @DisplayName("a request_id replayed by another principal gets nothing of the original")
    void requestIdReplayByAnotherPrincipalLearnsNothing() {
        String requestId = TestGateway.newRequestId();
        CreateSandboxRequest request = TestGateway.createRequest("team-a", unique("a"))
                .setRequestId(requestId)
                .build();
        Sandbox created = alice.createSandbox(request).getSandbox();

        StatusRuntimeException replay = refusal(() -> carol.createSandbox(request));
        assertThat(replay.getStatus().getCode()).isEqualTo(Status.Code.ALREADY_EXISTS);
        assertThat(replay.toString()).doesNotContain(created.getId());
        StatusRuntimeException lookup = refusal(() -> carol.getOperation(
                GetOperationRequest.newBuilder().setRequestId(requestId).build()));
        assertThat(lookup.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(lookup.toString()).doesNotContain(created.getId());

        // The principal that made it still replays it.
        var again = alice.createSandbox(request);
        assertThat(again.getReplayed()).isTrue();
        assertThat(again.getSandbox().getId()).isEqualTo(created.getId());
        assertThat(alice.getOperation(GetOperationRequest.newBuilder()
                                .setRequestId(requestId)
                                .build())
                        .getSandboxId())
                .isEqualTo(created.getId());
    }

    @Test
    @DisplayName("a changed policy file takes effect without a restart")
    void policyIsReloadedOnChange() throws Exception {
        var dave = gateway.stub(gateway.jwt("dave"));
        ListSandboxesRequest teamB =
                ListSandboxesRequest.newBuilder().setWorkspace("team-b").build();
        assertThat(refusal(() -> dave.listSandboxes(teamB)).getStatus().getCode())
                .isEqualTo(Status.Code.PERMISSION_DENIED);
        gateway.replacePolicy(SecureGateway.POLICY.replace(
                "{\"workspace\": \"*\", \"role\": \"viewer\", \"groups\": [\"auditors\"]}",
                "{\"workspace\": \"*\", \"role\": \"viewer\", \"groups\": [\"auditors\"]},\n"
                        + "  {\"workspace\": \"team-b\", \"role\": \"viewer\", \"principals\": [\"dave\"]}"));
        try {
            await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> dave.listSandboxes(teamB) != null);
        } finally {
            gateway.replacePolicy(SecureGateway.POLICY);
        }
    }

    @Test
    @DisplayName("a denied call and a mutating call each leave one JSON audit line, never the token")
    void auditLogRecordsDeniedAndMutatingCalls() throws Exception {
        ch.qos.logback.classic.Logger audit =
                (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(AuditLog.LOGGER);
        ch.qos.logback.classic.Level level = audit.getLevel();
        ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> lines =
                new ch.qos.logback.core.read.ListAppender<>();
        lines.start();
        audit.addAppender(lines);
        audit.setLevel(ch.qos.logback.classic.Level.INFO);
        try {
            String token = gateway.jwt("bob");
            var intruder = gateway.stub(token);
            String name = unique("audit");
            refusal(() -> intruder.createSandbox(
                    TestGateway.createRequest("team-a", name).build()));
            String requestId = TestGateway.newRequestId();
            Sandbox created = alice.createSandbox(TestGateway.createRequest("team-a", name)
                            .setRequestId(requestId)
                            .build())
                    .getSandbox();
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> entries(lines, name).size() == 2);
            List<com.google.gson.JsonObject> entries = entries(lines, name);
            assertThat(entries.get(0).get("principal").getAsString()).isEqualTo("bob");
            assertThat(entries.get(0).get("method").getAsString()).isEqualTo("CreateSandbox");
            assertThat(entries.get(0).get("outcome").getAsString()).isEqualTo("PERMISSION_DENIED");
            assertThat(entries.get(0).get("workspace").getAsString()).isEqualTo("team-a");
            assertThat(entries.get(1).get("principal").getAsString()).isEqualTo("alice");
            assertThat(entries.get(1).get("outcome").getAsString()).isEqualTo("OK");
            assertThat(entries.get(1).get("sandbox_id").getAsString()).isEqualTo(created.getId());
            assertThat(entries.get(1).get("request_id").getAsString()).isEqualTo(requestId);
            assertThat(entries.get(1).get("time").getAsString()).isNotEmpty();
            assertThat(lines.list)
                    .noneSatisfy(line -> assertThat(line.getFormattedMessage())
                            .contains(token.substring(token.lastIndexOf('.') + 1)));
        } finally {
            audit.detachAppender(lines);
            audit.setLevel(level);
        }
    }

    private static List<com.google.gson.JsonObject> entries(
            ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> lines, String name) {
        synchronized (lines) {
            return List.copyOf(lines.list).stream()
                    .map(line -> com.google.gson.JsonParser.parseString(line.getFormattedMessage())
                            .getAsJsonObject())
                    .filter(entry -> entry.get("name").getAsString().equals(name))
                    .toList();
        }
    }
}
