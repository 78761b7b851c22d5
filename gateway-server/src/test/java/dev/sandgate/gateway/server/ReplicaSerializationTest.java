package dev.sandgate.gateway.server;

import static dev.sandgate.gateway.testing.GrpcErrors.failure;
import static org.assertj.core.api.Assertions.assertThat;

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
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two gateway replicas on one PostgreSQL: an operation on a sandbox through one replica waits for the driver call that
 * another replica is making on it, and never makes a driver call of its own meanwhile.
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
                        passwordFile.toString())
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
}
