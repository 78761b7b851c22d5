package dev.sandgate.distribution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.sandgate.testing.ProcessTest;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Starts bin/sandgate-gateway from the assembled folder with the reference driver on a free loopback port, waits for
 * gRPC health to say SERVING, and drives sandboxes through it with bin/sandgate.
 */
@ProcessTest
class AssembledGatewayTest {
    private static final Pattern TOKEN = Pattern.compile("(?m)^token:\\s+(\\S+)$");

    @TempDir
    static Path scratch;

    private static RunningGateway gateway;
    private static String target;

    @BeforeAll
    static void startGateway() throws Exception {
        gateway = RunningGateway.start(scratch);
        target = gateway.target();
    }

    @AfterAll
    static void stopGateway() throws InterruptedException {
        if (gateway != null) {
            gateway.close();
        }
    }

    @Test
    void theCliDrivesASandboxThroughCreateGetStopStartAndDelete() {
        assertThat(cli("create", "-w", "demo", "-n", "lifecycle", "--image", "busybox", "--", "sleep", "3600"))
                .contains("result:", "created", "name:", "lifecycle", "generation:", "1 (started");
        assertThat(cli("get", "-w", "demo", "-n", "lifecycle")).containsPattern("(?m)^workspace:\\s+demo$");
        assertThat(cli("stop", "-w", "demo", "-n", "lifecycle")).contains("STOPPED_NOW");
        assertThat(cli("start", "-w", "demo", "-n", "lifecycle"))
                .contains("LAUNCHED")
                .containsPattern("(?m)^generation:\\s+2 ");
        assertThat(cli("delete", "-w", "demo", "-n", "lifecycle")).contains("DELETED_NOW");
        assertThat(cli("delete", "-w", "demo", "-n", "lifecycle", "--missing-ok"))
                .contains("NOTHING_DELETED");
    }

    @Test
    void aStopBoundToAnOlderExecutionFailsWithItsCodeAndReason() {
        cli("create", "-w", "demo", "-n", "stale", "--image", "busybox");
        String firstToken = token(cli("get", "-w", "demo", "-n", "stale"));
        cli("stop", "-w", "demo", "-n", "stale", "--expect-token", firstToken);
        cli("start", "-w", "demo", "-n", "stale");

        Distribution.Result stale = Distribution.run(
                scratch,
                "sandgate",
                "--target",
                target,
                "stop",
                "-w",
                "demo",
                "-n",
                "stale",
                "--expect-token",
                firstToken);

        assertThat(stale.status()).isEqualTo(1);
        assertThat(stale.err()).contains("error: FAILED_PRECONDITION", "reason: STALE_EXECUTION");
        assertThat(cli("get", "-w", "demo", "-n", "stale")).doesNotContainPattern("(?m)^phase:\\s+STOPP");
    }

    @Test
    void listAndWatchShowACreatedSandbox() {
        cli("create", "-w", "listed", "-n", "shown", "--image", "busybox");

        assertThat(cli("list", "-w", "listed")).contains("listed", "shown");
        assertThat(cli("watch", "-w", "listed", "--until-synced"))
                .contains("SNAPSHOT", "listed/shown")
                .contains("SYNCED");
    }

    @Test
    void theGatewayLogsOneLinePerTransitionAndNoJvmWarning() throws InterruptedException {
        String id = field(cli("create", "-w", "logged", "-n", "one", "--image", "busybox"), "id");
        cli("stop", "-w", "logged", "-n", "one");

        String line = "sandbox=" + id + " op=stop";
        await().atMost(Duration.ofSeconds(5))
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(20))
                .untilAsserted(() -> assertThat(log()).contains(line));
        assertThat(log())
                .contains("transition sandbox=" + id + " op=create")
                .contains(line)
                .doesNotContain("WARNING:");
    }

    @Test
    void gatewayHelpListsItsOptions() {
        Distribution.Result help = Distribution.run(scratch, "sandgate-gateway", "--help");

        assertThat(help.status()).isZero();
        assertThat(help.out()).contains("--listen", "--data-dir", "--driver", "--token-key-file");
    }

    /** Runs bin/sandgate against the gateway; the command must succeed. Returns what it printed. */
    private static String cli(String... args) {
        String[] all = new String[args.length + 2];
        all[0] = "--target";
        all[1] = target;
        System.arraycopy(args, 0, all, 2, args.length);
        Distribution.Result result = Distribution.run(scratch, "sandgate", all);
        assertThat(result.status())
                .as("sandgate %s\nstdout:\n%s\nstderr:\n%s", String.join(" ", args), result.out(), result.err())
                .isZero();
        return result.out();
    }

    /** The value of a {@code name: value} line the CLI printed. */
    private static String field(String output, String name) {
        Matcher matcher =
                Pattern.compile("(?m)^" + Pattern.quote(name) + ":\\s+(\\S+)").matcher(output);
        assertThat(matcher.find()).as("a %s line in:\n%s", name, output).isTrue();
        return matcher.group(1);
    }

    private static String token(String getOutput) {
        Matcher matcher = TOKEN.matcher(getOutput);
        assertThat(matcher.find()).as("a token line in:\n%s", getOutput).isTrue();
        return matcher.group(1);
    }

    private static String log() {
        return gateway.log();
    }
}
