package dev.sandgate.driver.reference;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.StreamKind;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SimulatedShellTest {
    /** An in-memory machine: what the commands wrote, the files of /tmp, the sleeps asked. */
    private static final class Machine implements SimulatedShell.Machine {
        final StringBuilder stdout = new StringBuilder();
        final StringBuilder stderr = new StringBuilder();
        final Set<String> files = new HashSet<>();
        final List<Duration> sleeps = new ArrayList<>();
        final Deque<byte[]> stdin = new ArrayDeque<>();

        @Override
        public void write(StreamKind stream, String text) {
            (stream == StreamKind.STDERR ? stderr : stdout).append(text);
        }

        @Override
        public Optional<byte[]> readStdin() {
            return Optional.ofNullable(stdin.poll());
        }

        @Override
        public void writeStdout(byte[] data) {
            stdout.append(new String(data, StandardCharsets.UTF_8));
        }

        @Override
        public void touch(String name) {
            files.add(name);
        }

        @Override
        public boolean exists(String name) {
            return files.contains(name);
        }

        @Override
        public void sleep(Duration duration) {
            sleeps.add(duration);
        }
    }

    private final Machine machine = new Machine();

    private int run(Map<String, String> environment, String... argv) {
        return new SimulatedShell(environment, machine).run(List.of(argv));
    }

    @Test
    void echoWritesItsWordsAndANewline() {
        assertThat(run(Map.of(), "echo", "hello", "kit")).isZero();
        assertThat(machine.stdout).hasToString("hello kit\n");
    }

    @Test
    void aScriptRedirectsToStderrAndEndsWithItsExitCode() {
        assertThat(run(Map.of(), "sh", "-c", "echo out; echo err >&2; exit 3; echo never"))
                .isEqualTo(3);
        assertThat(machine.stdout).hasToString("out\n");
        assertThat(machine.stderr).hasToString("err\n");
    }

    @Test
    void variablesExpandFromTheEnvironmentInScriptsOnly() {
        run(Map.of("NAME", "value"), "sh", "-c", "echo $NAME ${NAME} $UNSET end");
        run(Map.of("NAME", "value"), "echo", "$NAME");
        assertThat(machine.stdout).hasToString("value value end\n$NAME\n");
    }

    @Test
    void touchAndTestSeeOnlyFilesInTmp() {
        assertThat(run(Map.of(), "test", "-e", "/tmp/marker")).isEqualTo(1);
        assertThat(run(Map.of(), "touch", "/tmp/marker")).isZero();
        assertThat(run(Map.of(), "test", "-e", "/tmp/marker")).isZero();
        assertThat(run(Map.of(), "touch", "/etc/passwd")).isEqualTo(1);
        assertThat(run(Map.of(), "touch", "/tmp/../etc")).isEqualTo(1);
        assertThat(machine.files).containsExactly("marker");
    }

    @Test
    void catCopiesStandardInputToStdout() {
        machine.stdin.add("one\n".getBytes(StandardCharsets.UTF_8));
        machine.stdin.add("two\n".getBytes(StandardCharsets.UTF_8));
        assertThat(run(Map.of(), "cat")).isZero();
        assertThat(machine.stdout).hasToString("one\ntwo\n");
    }

    @Test
    void execSleepSleepsAndEndsTheScript() {
        assertThat(run(Map.of(), "sh", "-c", "echo a; exec sleep 3600; echo never"))
                .isZero();
        assertThat(machine.sleeps).containsExactly(Duration.ofHours(1));
        assertThat(machine.stdout).hasToString("a\n");
    }

    @Test
    void anUnknownCommandExitsWith127AndSaysSoOnStderr() {
        assertThat(run(Map.of(), "rm", "-rf", "/")).isEqualTo(127);
        assertThat(run(Map.of(), "sh", "-c", "curl example.org; echo after")).isZero();
        assertThat(machine.stderr.toString()).contains("rm: not found").contains("curl: not found");
        assertThat(machine.stdout).hasToString("after\n");
    }
}
