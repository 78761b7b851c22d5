package dev.sandgate.conformance.selftest;

import static dev.sandgate.conformance.selftest.BrokenDriversAreCaughtTest.assertFails;

import dev.sandgate.conformance.selftest.broken.ExecIgnoresTheGenerationKit;
import dev.sandgate.conformance.selftest.broken.ExecLosesStderrKit;
import dev.sandgate.conformance.selftest.broken.ExecLosesTheExitCodeKit;
import dev.sandgate.conformance.selftest.broken.LogsShowTheCurrentExecutionKit;
import org.junit.jupiter.api.Test;

/**
 * Proves that the exec and logs rules catch violations, as {@link BrokenDriversAreCaughtTest} does for the others. Not
 * run over the wire by driver-host's self-test: the remote driver does not forward exec and logs (it claims neither),
 * so there the kit takes its UNSUPPORTED path.
 */
class BrokenExecAndLogsDriversAreCaughtTest {
    @Test
    void anExecThatRunsInTheNewerExecutionFailsThePinningTest() {
        assertFails(
                ExecIgnoresTheGenerationKit.class,
                "required_execNamingAReplacedExecutionFailsPreconditionAndRunsNothing");
    }

    @Test
    void anExecThatLosesStderrFailsTheStreamsTest() {
        assertFails(ExecLosesStderrKit.class, "required_execKeepsStdoutAndStderrApartAndReportsTheExitCode");
    }

    @Test
    void anExecThatLosesTheExitCodeFailsEveryTestThatExpectsANonZeroOne() {
        assertFails(
                ExecLosesTheExitCodeKit.class,
                "required_execKeepsStdoutAndStderrApartAndReportsTheExitCode",
                "required_execNamingAReplacedExecutionFailsPreconditionAndRunsNothing",
                "required_execWithAnotherNameOrWorkspaceFailsPreconditionAndRunsNothing");
    }

    @Test
    void logsThatShowAnotherExecutionsOutputFailTheReplacedExecutionTest() {
        assertFails(
                LogsShowTheCurrentExecutionKit.class,
                "required_logsOfAReplacedExecutionFailPreconditionAndNeverShowAnotherExecutionsOutput");
    }
}
