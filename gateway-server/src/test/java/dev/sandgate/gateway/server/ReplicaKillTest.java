package dev.sandgate.gateway.server;

import dev.sandgate.api.v1.SandboxSpec;
import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.testing.EngineTest;
import dev.sandgate.testing.ProcessTest;
import dev.sandgate.testing.replicas.ReplicaKillRun;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three gateway processes on one PostgreSQL schema and one reference-driver directory, six clients spread over them
 * doing random creates, stops, starts and deletes with request_ids, one replica killed with SIGKILL four times (every
 * second time the leader) and restarted. What must hold afterwards, and what a correct gateway may legitimately repeat
 * after a kill, is written in {@code dev.sandgate.testing.replicas.KillRunChecks}: nothing lost, no duplicate driver
 * call per request_id (a re-run of the same recorded input after its process died, or after a transient driver
 * error, is the only repeat), no orphan, no generation regression, stale tokens refused on every replica, every
 * replica's watch ordered and complete (it sees the final change of every sandbox, made through any replica).
 */
@ProcessTest
@EngineTest
class ReplicaKillTest {
    /** Kept when the test fails: the replicas' logs and the driver journal. */
    @TempDir(cleanup = CleanupMode.ON_SUCCESS)
    Path root;

    @Test
    @DisplayName("replicas killed under load: nothing lost, duplicated or orphaned, tokens and watches stay right")
    void replicasKilledUnderLoad() throws Exception {
        Path backend = Files.createDirectories(root.resolve("backend"));
        ReplicaKillRun.Report report = ReplicaKillRun.run(new ReplicaKillRun.Settings(
                root,
                System.getProperty("java.class.path"),
                GatewayMain.class.getName(),
                ReferenceDriverProvider.NAME,
                Map.of(ReferenceDriverProvider.DIRECTORY, backend.toString()),
                "replica-kill",
                SandboxSpec.newBuilder().setImage("localhost/busybox:latest").build(),
                3,
                6,
                Duration.ofSeconds(75),
                4));
        System.out.println("replica kill run: " + report);
    }
}
