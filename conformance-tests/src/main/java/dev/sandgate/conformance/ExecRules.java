package dev.sandgate.conformance;

import static dev.sandgate.conformance.KitAssertions.expectFailure;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Exec rules: a command runs in the execution its call names and only there, with its output on the right stream,
 * its standard input, its environment and its exit code; a call naming a replaced or stopped execution, an absent id
 * or another name runs nothing.
 *
 * <p>The commands are the kit's portable subset, which busybox provides and the reference driver simulates: argv
 * {@code echo WORDS...}, {@code cat}, {@code touch PATH}, {@code test -e PATH}, {@code sleep N}, and {@code sh -c
 * SCRIPT} of such commands separated by {@code ;} (with {@code echo ... >&2}, {@code exit N}, {@code exec sleep N} and
 * {@code $NAME} from the environment). Paths are under {@code /tmp}.
 *
 * <p>A driver that does not claim {@link dev.sandgate.spi.DriverCapabilities#exec()}: each test checks instead that
 * the exec it would run is refused with UNSUPPORTED before anything runs (on a running sandbox, with no callback), so
 * that no test is skipped.
 */
abstract class ExecRules extends WatchRules {

    /**
     * One running sandbox serves the tests that leave it running at generation 1; if a test breaks it, the next one
     * gets a fresh one.
     */
    @Nested
    @DisplayName("Exec")
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    class Exec {
        private SandboxRef fixture;

        @AfterAll
        void removeFixture() {
            if (fixture != null) {
                kit.deleteThroughDriver(fixture);
            }
        }

        /** The running sandbox at generation 1 shared by the tests that do not stop it. */
        private SandboxRef fixture() {
            if (fixture != null) {
                try {
                    SandboxObservation now = kit.driver.get(fixture);
                    if (now.state() == SandboxState.RUNNING && now.generation() == 1) {
                        return fixture;
                    }
                } catch (DriverException e) {
                    // gone or broken: replaced below
                }
                kit.deleteThroughDriver(fixture);
                kit.probe.remove(fixture.id());
            }
            fixture = kit.newRef("exec");
            kit.createFixture(fixture);
            return fixture;
        }

        /**
         * Whether the driver claims exec. When it does not, checks the refusal of {@code command} on the running
         * fixture: UNSUPPORTED, thrown, with no callback and the sandbox untouched.
         */
        private boolean claimed(ExecCommand command) {
            if (kit.capabilities.exec()) {
                return true;
            }
            SandboxRef ref = fixture();
            ResourceFacts before = kit.facts(ref.id());
            var recorder = new OutputRecorder(kit.timeout);
            expectFailure(DriverErrorCode.UNSUPPORTED, () -> kit.exec(ref, 1, command, recorder));
            recorder.assertNoCallbacks("exec by a driver that does not claim exec");
            kit.assertUntouched(before, "exec by a driver that does not claim exec");
            return false;
        }

        @Test
        void required_execRunsACommandAndReportsItsOutputAndExitCode() {
            String word = "word-" + KitSession.randomHex(8);
            ExecCommand echo = ExecCommand.of("echo", "sandgate-kit", word);
            if (!claimed(echo)) {
                return;
            }

            OutputRecorder result = kit.execToEnd(fixture(), 1, echo);

            assertThat(result.stdout()).as("stdout of %s", echo.command()).isEqualTo("sandgate-kit " + word + "\n");
            assertThat(result.stderr()).as("stderr of %s", echo.command()).isEmpty();
            assertExited(result, 0);
        }

        @Test
        void required_execKeepsStdoutAndStderrApartAndReportsTheExitCode() {
            String out = "out-" + KitSession.randomHex(8);
            String err = "err-" + KitSession.randomHex(8);
            ExecCommand script = ExecCommand.of("sh", "-c", "echo " + out + "; echo " + err + " >&2; exit 3");
            if (!claimed(script)) {
                return;
            }

            OutputRecorder result = kit.execToEnd(fixture(), 1, script);

            assertThat(result.stdout()).as("stdout of %s", script.command()).isEqualTo(out + "\n");
            assertThat(result.stderr()).as("stderr of %s", script.command()).isEqualTo(err + "\n");
            assertExited(result, 3);
        }

        @Test
        void required_execPassesStandardInputThrough() {
            var cat = new ExecCommand(List.of("cat"), Map.of(), Optional.empty(), false, true, Optional.empty());
            if (!claimed(cat)) {
                return;
            }
            String first = "first line " + KitSession.randomHex(8) + "\n";
            String second = "second line " + KitSession.randomHex(8) + "\n";
            var recorder = new OutputRecorder(kit.timeout);

            ExecProcess process = kit.exec(fixture(), 1, cat, recorder);
            process.writeStdin(first.getBytes(StandardCharsets.UTF_8));
            process.writeStdin(second.getBytes(StandardCharsets.UTF_8));
            process.closeStdin();
            recorder.awaitEnd("cat after its standard input was closed");

            recorder.assertKeptTheListenerContract("cat");
            assertThat(recorder.stdout()).as("what cat echoed").isEqualTo(first + second);
            assertExited(recorder, 0);
        }

        @Test
        void required_execRunsWithTheCommandsEnvironment() {
            String value = "value-" + KitSession.randomHex(8);
            var script = new ExecCommand(
                    List.of("sh", "-c", "echo $SANDGATE_KIT_EXEC_VALUE"),
                    Map.of("SANDGATE_KIT_EXEC_VALUE", value),
                    Optional.empty(),
                    false,
                    false,
                    Optional.empty());
            if (!claimed(script)) {
                return;
            }

            OutputRecorder result = kit.execToEnd(fixture(), 1, script);

            assertThat(result.stdout()).as("the variable as the command saw it").isEqualTo(value + "\n");
            assertExited(result, 0);
        }

        @Test
        void required_execNamingAReplacedExecutionFailsPreconditionAndRunsNothing() {
            String marker = marker();
            ExecCommand touch = ExecCommand.of("touch", marker);
            if (!claimed(touch)) {
                return;
            }
            SandboxRef ref = kit.newRef("exec-pinned");
            kit.createRunning(ref);
            kit.restart(ref, 1);

            var refused = new OutputRecorder(kit.timeout);
            DriverException failure =
                    expectFailure(DriverErrorCode.FAILED_PRECONDITION, () -> kit.exec(ref, 1, touch, refused));

            assertThat(failure.mismatches())
                    .as("the refusal names the generation asked for and the one the resource carries")
                    .contains(new Mismatch(Mismatch.GENERATION, "1", "2"));
            refused.assertNoCallbacks("exec naming replaced generation 1");
            assertExited(kit.execToEnd(ref, 2, ExecCommand.of("test", "-e", marker)), 1);
            // The same commands do reach the execution that runs: the check above could fail.
            String reached = marker();
            assertExited(kit.execToEnd(ref, 2, ExecCommand.of("touch", reached)), 0);
            assertExited(kit.execToEnd(ref, 2, ExecCommand.of("test", "-e", reached)), 0);
        }

        @Test
        void required_execOnAStoppedExecutionFailsPrecondition() {
            ExecCommand touch = ExecCommand.of("touch", marker());
            if (!claimed(touch)) {
                return;
            }
            SandboxRef ref = kit.newRef("exec-stopped");
            kit.createRunning(ref);
            kit.driver.stop(ref, OptionalLong.of(1));

            var refused = new OutputRecorder(kit.timeout);
            DriverException failure =
                    expectFailure(DriverErrorCode.FAILED_PRECONDITION, () -> kit.exec(ref, 1, touch, refused));

            assertThat(failure.mismatches())
                    .as("the refusal says that the execution does not run")
                    .contains(new Mismatch(Mismatch.RUNNING, "true", "false"));
            refused.assertNoCallbacks("exec in a stopped execution");
        }

        @Test
        void required_execOfAnAbsentIdIsNotFound() {
            ExecCommand touch = ExecCommand.of("touch", marker());
            if (!claimed(touch)) {
                return;
            }
            var refused = new OutputRecorder(kit.timeout);

            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.exec(kit.newRef("absent"), 1, touch, refused));

            refused.assertNoCallbacks("exec naming an absent id");
        }

        @Test
        void required_execWithAnotherNameOrWorkspaceFailsPreconditionAndRunsNothing() {
            String marker = marker();
            ExecCommand touch = ExecCommand.of("touch", marker);
            if (!claimed(touch)) {
                return;
            }
            SandboxRef ref = fixture();
            for (SandboxRef wrong : List.of(
                    new SandboxRef(ref.id(), ref.workspace(), ref.name() + "-other"),
                    new SandboxRef(ref.id(), KitSession.OTHER_WORKSPACE, ref.name()))) {
                var refused = new OutputRecorder(kit.timeout);

                expectFailure(DriverErrorCode.FAILED_PRECONDITION, () -> kit.exec(wrong, 1, touch, refused));

                refused.assertNoCallbacks("exec naming " + wrong.workspace() + "/" + wrong.name());
            }
            assertExited(kit.execToEnd(ref, 1, ExecCommand.of("test", "-e", marker)), 1);
        }

        @Test
        void required_closingARunningExecEndsItWithExactlyOneFinalCallback() {
            ExecCommand sleep = ExecCommand.of("sleep", "3600");
            if (!claimed(sleep)) {
                return;
            }
            SandboxRef ref = fixture();
            var recorder = new OutputRecorder(kit.timeout);
            ExecProcess process = kit.exec(ref, 1, sleep, recorder);
            assertThat(recorder.end())
                    .as("how sleep 3600 ended before it was closed")
                    .isEmpty();

            process.close();
            recorder.awaitEnd("sleep 3600 after its process was closed");
            process.close();
            // A later exec to its end, so that a second final callback of the closed one would have arrived by now.
            assertExited(kit.execToEnd(ref, 1, ExecCommand.of("echo", "after")), 0);

            recorder.assertKeptTheListenerContract("a closed exec");
            assertThat(recorder.ends()).as("final callbacks of a closed exec").hasSize(1);
        }

        private static String marker() {
            return "/tmp/sandgate-kit-" + KitSession.randomHex(12);
        }

        private static void assertExited(OutputRecorder result, int exitCode) {
            assertThat(result.end())
                    .as("how the command ended (%s)", result.describe())
                    .contains(OutputRecorder.End.exited(exitCode));
        }
    }
}
