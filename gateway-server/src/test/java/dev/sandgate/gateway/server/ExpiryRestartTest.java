package dev.sandgate.gateway.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Duration;
import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.ExpiryPolicy;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.Phase;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.SandboxTarget;
import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.gateway.testing.TestGateway;
import dev.sandgate.testing.GatewayProcess;
import dev.sandgate.testing.ProcessTest;
import dev.sandgate.testing.StoreSchema;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Expiry deadlines live in the store: a gateway killed before a TTL passes still expires the sandbox on time. */
@ProcessTest
class ExpiryRestartTest {
    @TempDir
    Path root;

    private final List<GatewayProcess> processes = new ArrayList<>();

    /** The PostgreSQL schema of a PostgreSQL run, else null (SQLite in the data directory). */
    private StoreSchema schema;

    @BeforeEach
    void store() throws Exception {
        schema = StoreSchema.forThisRun();
    }

    @AfterEach
    void stopProcesses() {
        processes.forEach(GatewayProcess::close);
        StoreSchema.closeIfAny(schema);
    }

    private GatewayProcess gateway(String name) throws Exception {
        List<String> args = new ArrayList<>(List.of(
                "--data-dir",
                root.resolve("data").toString(),
                "--driver",
                ReferenceDriverProvider.NAME,
                "--driver-property",
                ReferenceDriverProvider.DIRECTORY + "=" + root.resolve("backend"),
                "--gateway-id",
                "expiry-gw"));
        if (schema != null) {
            // The killed first one leaves its leases behind: the second waits out their time to live.
            args.addAll(schema.storeArgs());
            args.addAll(List.of("--replica-lease-ttl", "2s"));
        }
        GatewayProcess process = GatewayProcess.start(
                root, name, System.getProperty("java.class.path"), GatewayMain.class.getName(), args);
        processes.add(process);
        return process;
    }

    private static Sandbox get(GatewayProcess gateway, String id) {
        return gateway.stub()
                .getSandbox(GetSandboxRequest.newBuilder()
                        .setTarget(SandboxTarget.newBuilder().setId(id))
                        .build())
                .getSandbox();
    }

    @Test
    @DisplayName("a sandbox whose TTL passes while the gateway is down (SIGKILL) is stopped by the restarted one")
    void ttlSurvivesAKill() throws Exception {
        GatewayProcess first = gateway("first");
        // Long enough that the kill lands before the deadline even on a slow machine; the restart takes longer.
        Sandbox created = first.stub()
                .createSandbox(CreateSandboxRequest.newBuilder()
                        .setWorkspace("team")
                        .setName("ttl")
                        .setSpec(TestGateway.busybox())
                        .setExpiry(ExpiryPolicy.newBuilder()
                                .setTtl(Duration.newBuilder().setSeconds(2)))
                        .build())
                .getSandbox();
        Instant deadline = Instant.ofEpochSecond(
                created.getLease().getTtlDeadline().getSeconds(),
                created.getLease().getTtlDeadline().getNanos());
        first.kill();
        assertThat(Instant.now()).as("killed before the deadline").isBefore(deadline);

        GatewayProcess second = gateway("second");

        // The EXPIRED condition follows the stop in one more write.
        await().until(() -> get(second, created.getId()).getPhase() == Phase.STOPPED
                && get(second, created.getId()).getConditionsList().stream()
                        .anyMatch(c -> c.getType().equals("EXPIRED")));
        Sandbox stopped = get(second, created.getId());
        assertThat(stopped.getCurrentExecution().getGeneration()).isEqualTo(1);
        assertThat(stopped.getConditionsList())
                .anySatisfy(c -> assertThat(c.getType()).isEqualTo("EXPIRED"));
    }
}
