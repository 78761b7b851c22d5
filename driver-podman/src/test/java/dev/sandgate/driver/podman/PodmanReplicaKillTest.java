package dev.sandgate.driver.podman;

import dev.sandgate.api.v1.SandboxSpec;
import dev.sandgate.conformance.BackendResource;
import dev.sandgate.driver.container.testing.DockerJavaBackendProbe;
import dev.sandgate.driver.container.testing.TestEngine;
import dev.sandgate.gateway.server.GatewayMain;
import dev.sandgate.spi.Labels;
import dev.sandgate.testing.EngineTest;
import dev.sandgate.testing.ProcessTest;
import dev.sandgate.testing.replicas.ReplicaKillRun;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The replica kill run of the gateway's ReplicaKillTest over real Podman containers: three gateway processes on one
 * PostgreSQL schema and the Podman service, three clients, a replica killed with SIGKILL three times (the second time
 * the leader) and restarted; then nothing lost, no duplicate driver call per request_id, no orphan container, no
 * generation regression, stale tokens refused on every replica, watches ordered (see {@code KillRunChecks}).
 */
@ProcessTest
@EngineTest
class PodmanReplicaKillTest {
    /** Kept when the test fails: the replicas' logs and the driver journal. */
    @TempDir(cleanup = CleanupMode.ON_SUCCESS)
    Path root;

    @Test
    @DisplayName("replicas over Podman killed under load: nothing lost, duplicated or orphaned")
    void replicasKilledUnderLoad() throws Exception {
        TestEngine engine = PodmanTestEngine.ENGINE;
        engine.requireAvailable();
        String gatewayId = "kill-" + UUID.randomUUID().toString().substring(0, 8);
        try (DockerJavaBackendProbe probe = new DockerJavaBackendProbe(engine)) {
            try {
                ReplicaKillRun.Report report = ReplicaKillRun.run(new ReplicaKillRun.Settings(
                        root,
                        // This test's class path: the Podman driver, and none of the gateway's own test drivers.
                        System.getProperty("java.class.path"),
                        GatewayMain.class.getName(),
                        PodmanDriverProvider.NAME,
                        Map.of("podman.host", engine.host()),
                        gatewayId,
                        SandboxSpec.newBuilder()
                                .setImage(engine.image())
                                .addAllCommand(TestEngine.SLEEP_FOREVER)
                                .build(),
                        3,
                        3,
                        Duration.ofSeconds(60),
                        3));
                System.out.println("replica kill run over Podman: " + report);
            } finally {
                for (BackendResource resource : probe.resourcesOfGateway(gatewayId)) {
                    probe.remove(resource.stamp(Labels.SANDBOX_ID));
                }
            }
        }
    }
}
