package dev.sandgate.distribution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.sandgate.testing.ProcessTest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What an operator and a watching client see when the assembled gateway gets SIGTERM. */
@ProcessTest
class GatewayShutdownTest {
    @TempDir
    Path scratch;

    @Test
    void onSigtermTheGatewayEndsWatchesWithUnavailableLogsItsStopAndExitsWith143() throws Exception {
        try (RunningGateway gateway = RunningGateway.start(scratch)) {
            Distribution.Result created = Distribution.run(
                    scratch, "sandgate", "--target", gateway.target(), "create", "-w", "w", "-n", "a", "--image", "x");
            assertThat(created.status()).as(created.err()).isZero();
            Path watchOut = scratch.resolve("watch.out");
            Path watchErr = scratch.resolve("watch.err");
            Process watch = Distribution.launcher("sandgate", List.of("--target", gateway.target(), "watch"))
                    .redirectInput(
                            ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                    .redirectOutput(watchOut.toFile())
                    .redirectError(watchErr.toFile())
                    .start();
            try {
                awaitText(watchOut, watchErr, "SYNCED", watch);

                int status = gateway.terminate();

                assertThat(status)
                        .as("exit status after SIGTERM\n%s", gateway.log())
                        .isEqualTo(143);
                assertThat(watch.waitFor(30, TimeUnit.SECONDS)).isTrue();
                assertThat(watch.exitValue()).isEqualTo(1);
                assertThat(Files.readString(watchErr, StandardCharsets.UTF_8))
                        .contains("UNAVAILABLE", "reason: GATEWAY_SHUTTING_DOWN");
                // The gateway's own last lines reach the output; no call had to be cut off to stop.
                assertThat(gateway.log())
                        .contains("signal received: stopping the gateway on " + gateway.target())
                        .contains("stopping: no new calls, watch streams ended: 1;")
                        .containsPattern("stopped in \\d+ ms")
                        .doesNotContain("calls still running after");
            } finally {
                watch.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void aGatewayThatCannotOpenItsDataDirectoryLogsWhyAndExitsWith1() {
        Distribution.Result failed = Distribution.run(
                scratch,
                "sandgate-gateway",
                "--listen",
                "127.0.0.1:0",
                "--data-dir",
                "/proc/sandgate-data",
                "--driver",
                "reference",
                "--driver-property",
                "reference.directory=" + scratch.resolve("sandboxes"));

        assertThat(failed.status()).as("%s%s", failed.out(), failed.err()).isEqualTo(1);
        assertThat(failed.err())
                .contains(
                        "sandgate-gateway: the gateway could not start: cannot open the data directory /proc/sandgate-data: ");
        // The log line with the cause is written before the process exits, although no shutdown hook ran; one line,
        // without a stack trace.
        assertThat(failed.out())
                .contains("ERROR")
                .contains("the gateway could not start")
                .doesNotContain("\tat ");
    }

    /** Waits (up to 90 s) for a process's output file to contain {@code text}. */
    private static void awaitText(Path file, Path errors, String text, Process process) throws Exception {
        try {
            await("the text " + text + " in " + file + ", or the process's exit")
                    .atMost(Duration.ofSeconds(90))
                    .pollDelay(Duration.ZERO)
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> Files.readString(file, StandardCharsets.UTF_8).contains(text) || !process.isAlive());
        } catch (ConditionTimeoutException e) {
            // The failure below says what the process wrote.
        }
        if (Files.readString(file, StandardCharsets.UTF_8).contains(text)) {
            return;
        }
        throw new AssertionError("no " + text + " in " + file + " ("
                + (process.isAlive() ? "still running" : "exited with " + process.exitValue()) + "); output:\n"
                + Files.readString(file, StandardCharsets.UTF_8) + "\nerrors:\n"
                + Files.readString(errors, StandardCharsets.UTF_8));
    }
}
