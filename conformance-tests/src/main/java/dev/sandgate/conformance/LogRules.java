package dev.sandgate.conformance;

import static dev.sandgate.conformance.KitAssertions.expectFailure;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Logs rules: a read delivers the output of the execution it names and of no other, a read of a replaced execution is
 * refused, a followed read ends when the execution stops. The output is that of the driver's {@code printingSpec},
 * with lines unique to each sandbox.
 *
 * <p>The stdout line must arrive on STDOUT; the stderr line on STDERR, or on STDOUT where the backend's log does not
 * keep the streams apart (Kubernetes' does not): the kit checks that each line arrives exactly once.
 *
 * <p>A driver that does not claim {@link dev.sandgate.spi.DriverCapabilities#logs()}: each test checks instead that
 * the read it would make is refused with UNSUPPORTED before the driver looks the sandbox up (an absent id is
 * UNSUPPORTED, not NOT_FOUND), with no callback, so that no test is skipped.
 */
abstract class LogRules extends ExecRules {

    /**
     * One printing sandbox serves the tests that leave it running at generation 1; if a test breaks it, the next one
     * gets a fresh one.
     */
    @Nested
    @DisplayName("Logs")
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    class Logs {
        private Printing fixture;

        /** A sandbox of the printing spec and the lines its executions print. */
        private record Printing(SandboxRef ref, String out, String err) {}

        @AfterAll
        void removeFixture() {
            if (fixture != null) {
                kit.deleteThroughDriver(fixture.ref());
            }
        }

        private Printing fixture() {
            if (fixture != null) {
                try {
                    SandboxObservation now = kit.driver.get(fixture.ref());
                    if (now.state() == SandboxState.RUNNING && now.generation() == 1) {
                        return fixture;
                    }
                } catch (DriverException e) {
                    // gone or broken: replaced below
                }
                kit.deleteThroughDriver(fixture.ref());
                kit.probe.remove(fixture.ref().id());
            }
            Printing printing = printing("logs");
            kit.createFixture(printing.ref(), kit.printingSpec(printing.out(), printing.err()));
            fixture = printing;
            return fixture;
        }

        private Printing printing(String label) {
            String hex = KitSession.randomHex(8);
            return new Printing(kit.newRef(label), "sandgate-kit-out-" + hex, "sandgate-kit-err-" + hex);
        }

        /** Creates a sandbox of the printing spec at generation 1 and waits until it runs; deleted after the test. */
        private Printing createPrinting(String label) {
            Printing printing = printing(label);
            kit.createRunning(printing.ref(), kit.printingSpec(printing.out(), printing.err()));
            return printing;
        }

        /**
         * Whether the driver claims logs. When it does not, checks that a read (here of an absent id, so that nothing
         * needs launching) is refused with UNSUPPORTED, thrown, with no callback.
         */
        private boolean claimed(LogQuery query) {
            if (kit.capabilities.logs()) {
                return true;
            }
            var recorder = new OutputRecorder(kit.timeout);
            expectFailure(DriverErrorCode.UNSUPPORTED, () -> kit.logs(kit.newRef("no-logs"), 1, query, recorder));
            recorder.assertNoCallbacks("logs of a driver that does not claim logs");
            return false;
        }

        @Test
        void required_logsDeliverTheCurrentExecutionsStdoutAndStderr() {
            if (!claimed(new LogQuery(false, Optional.empty()))) {
                return;
            }
            Printing printing = fixture();

            OutputRecorder read = kit.readLogsUntil(printing.ref(), 1, printing.out(), printing.err());

            assertPrintedOnce(read, printing, "generation 1");
        }

        @Test
        void required_logsOfAReplacedExecutionFailPreconditionAndNeverShowAnotherExecutionsOutput() {
            if (!claimed(new LogQuery(false, Optional.empty()))) {
                return;
            }
            Printing printing = createPrinting("logs-replaced");
            kit.readLogsUntil(printing.ref(), 1, printing.out(), printing.err());
            kit.restart(printing.ref(), 1);

            var refused = new OutputRecorder(kit.timeout);
            DriverException failure = expectFailure(
                    DriverErrorCode.FAILED_PRECONDITION,
                    () -> kit.logs(printing.ref(), 1, new LogQuery(false, Optional.empty()), refused));

            assertThat(failure.mismatches())
                    .as("the refusal names the generation asked for and the one the resource carries")
                    .contains(new Mismatch(Mismatch.GENERATION, "1", "2"));
            refused.assertNoCallbacks("logs of replaced generation 1");
            OutputRecorder current = kit.readLogsUntil(printing.ref(), 2, printing.out(), printing.err());
            assertPrintedOnce(current, printing, "generation 2, after generation 1 printed the same lines");
        }

        @Test
        void required_followingLogsCompletesWhenTheExecutionStops() {
            LogQuery follow = new LogQuery(true, Optional.empty());
            if (!claimed(follow)) {
                return;
            }
            Printing printing = createPrinting("logs-followed");
            var followed = new OutputRecorder(kit.timeout);
            kit.logs(printing.ref(), 1, follow, followed);
            followed.awaitOutput("a followed logs read of a running execution", printing.out(), printing.err());
            assertThat(followed.end())
                    .as("how a followed read of an execution that still runs ended")
                    .isEmpty();

            kit.driver.stop(printing.ref(), OptionalLong.of(1));
            OutputRecorder.End end = followed.awaitEnd("a followed logs read after its execution stopped");

            assertThat(end.completed())
                    .as("a followed read completes when its execution stops, but it %s", end)
                    .isTrue();
            followed.assertKeptTheListenerContract("a followed logs read");
            assertPrintedOnce(followed, printing, "a followed read of generation 1");
            // A backend may keep no output of a stopped execution (Agent Sandbox deletes the pod on suspend): the read
            // is then refused with FAILED_PRECONDITION; where it answers, it shows generation 1's lines once.
            OutputRecorder stopped;
            try {
                stopped = kit.readLogsUntil(printing.ref(), 1, printing.out(), printing.err());
            } catch (DriverException e) {
                assertThat(e.code())
                        .as("a logs read of a stopped execution whose output is gone: %s", e.getMessage())
                        .isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
                return;
            }
            assertPrintedOnce(stopped, printing, "generation 1 once stopped");
        }

        @Test
        void required_logsOfAnAbsentIdAreNotFound() {
            LogQuery query = new LogQuery(false, Optional.empty());
            if (!claimed(query)) {
                return;
            }
            var refused = new OutputRecorder(kit.timeout);

            expectFailure(DriverErrorCode.NOT_FOUND, () -> kit.logs(kit.newRef("absent"), 1, query, refused));

            refused.assertNoCallbacks("logs of an absent id");
        }

        @Test
        void required_logsWithAnotherNameOrWorkspaceFailPrecondition() {
            LogQuery query = new LogQuery(false, Optional.empty());
            if (!claimed(query)) {
                return;
            }
            SandboxRef ref = fixture().ref();
            for (SandboxRef wrong : List.of(
                    new SandboxRef(ref.id(), ref.workspace(), ref.name() + "-other"),
                    new SandboxRef(ref.id(), KitSession.OTHER_WORKSPACE, ref.name()))) {
                var refused = new OutputRecorder(kit.timeout);

                expectFailure(DriverErrorCode.FAILED_PRECONDITION, () -> kit.logs(wrong, 1, query, refused));

                refused.assertNoCallbacks("logs naming " + wrong.workspace() + "/" + wrong.name());
            }
        }

        /**
         * The stdout line exactly once, on STDOUT; the stderr line exactly once, on STDERR or (a backend that merges
         * the streams) on STDOUT; nothing of another execution.
         */
        private static void assertPrintedOnce(OutputRecorder read, Printing printing, String what) {
            assertThat(occurrences(read.stdout(), printing.out()))
                    .as("%s: the stdout line on STDOUT, exactly once (%s)", what, read.describe())
                    .isEqualTo(1);
            assertThat(read.stderr())
                    .as("%s: STDERR carries no stdout line", what)
                    .doesNotContain(printing.out());
            assertThat(occurrences(read.stdout(), printing.err()) + occurrences(read.stderr(), printing.err()))
                    .as("%s: the stderr line exactly once (%s)", what, read.describe())
                    .isEqualTo(1);
        }

        private static int occurrences(String text, String line) {
            int count = 0;
            for (int at = text.indexOf(line); at >= 0; at = text.indexOf(line, at + line.length())) {
                count++;
            }
            return count;
        }
    }
}
