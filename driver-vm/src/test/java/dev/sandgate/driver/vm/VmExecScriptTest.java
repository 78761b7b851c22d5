package dev.sandgate.driver.vm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The script that carries an exec's command to the guest agent, run here by the host's {@code sh}. */
class VmExecScriptTest {
    @Test
    void everyWordAndValueReachesTheCommandExactlyAsGiven() throws Exception {
        var command = new ExecCommand(
                List.of("sh", "-c", "printf '%s|' \"$@\" \"$VALUE\" \"$PWD\"", "sh", "a b", "it's", "$HOME", "*"),
                Map.of("VALUE", "x'y $z\nnext"),
                Optional.of("/tmp"),
                false,
                false,
                Optional.empty());

        String output = runInShell(VmExec.script(command));

        assertThat(output).isEqualTo("a b|it's|$HOME|*|x'y $z\nnext|/tmp|");
    }

    @Test
    void aCommandRunsInTheWorkspaceUnlessItNamesADirectory() {
        assertThat(VmExec.script(ExecCommand.of("pwd"))).startsWith("cd '/workspace' || exit 126\n");
    }

    @Test
    void anEnvironmentNameTheShellCannotSetIsAnInvalidArgument() {
        var command =
                new ExecCommand(List.of("true"), Map.of("A-B", "1"), Optional.empty(), false, false, Optional.empty());

        assertThatThrownBy(() -> VmExec.script(command))
                .isInstanceOfSatisfying(
                        DriverException.class, e -> assertThat(e.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT));
    }

    @Test
    void aTerminalIsUnsupported() {
        var command = new ExecCommand(List.of("sh"), Map.of(), Optional.empty(), true, true, Optional.empty());

        assertThatThrownBy(() -> VmExec.script(command))
                .isInstanceOfSatisfying(
                        DriverException.class, e -> assertThat(e.code()).isEqualTo(DriverErrorCode.UNSUPPORTED));
    }

    private static String runInShell(String script) throws IOException, InterruptedException {
        Process shell =
                new ProcessBuilder("sh", "-c", script).redirectErrorStream(true).start();
        String output = new String(shell.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(shell.waitFor())
                .as("the script's exit status (output: %s)", output)
                .isZero();
        return output;
    }
}
