package dev.sandgate.driver.toolkit;

import static dev.sandgate.driver.toolkit.StartDecisionTest.REF;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.driver.toolkit.ExecutionFacts.Access;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Mismatch;
import org.junit.jupiter.api.Test;

class ExecutionFactsTest {
    private static ExecutionFacts facts(String workspace, String name, long generation, boolean running) {
        return new ExecutionFacts(workspace, name, generation, running);
    }

    private static void assertRefused(Runnable check, String subject) {
        assertThatThrownBy(check::run).isInstanceOfSatisfying(DriverException.class, e -> {
            assertThat(e.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
            assertThat(e.mismatches()).extracting(Mismatch::subject).containsExactly(subject);
        });
    }

    @Test
    void aRunningExecutionOfTheNamedGenerationAtTheRefsLocatorIsReachedByExecAndLogs() {
        ExecutionFacts found = facts(REF.workspace(), REF.name(), 3, true);
        assertThatCode(() -> found.require(REF, 3, Access.EXEC)).doesNotThrowAnyException();
        assertThatCode(() -> found.require(REF, 3, Access.LOGS)).doesNotThrowAnyException();
    }

    @Test
    void aStoppedExecutionIsRefusedToExecWithARunningMismatchButItsLogsAreRead() {
        ExecutionFacts stopped = facts(REF.workspace(), REF.name(), 3, false);
        assertRefused(() -> stopped.require(REF, 3, Access.EXEC), Mismatch.RUNNING);
        assertThatCode(() -> stopped.require(REF, 3, Access.LOGS)).doesNotThrowAnyException();
    }

    @Test
    void anOlderOrNewerGenerationIsAGenerationMismatchNamingBoth() {
        ExecutionFacts found = facts(REF.workspace(), REF.name(), 4, true);
        for (Access access : Access.values()) {
            assertRefused(() -> found.require(REF, 3, access), Mismatch.GENERATION);
            assertRefused(() -> found.require(REF, 5, access), Mismatch.GENERATION);
        }
        assertThatThrownBy(() -> found.require(REF, 3, Access.LOGS))
                .isInstanceOfSatisfying(
                        DriverException.class,
                        e -> assertThat(e.mismatches()).containsExactly(new Mismatch(Mismatch.GENERATION, "3", "4")));
    }

    @Test
    void anotherWorkspaceOrNameIsAnIdentityMismatch() {
        assertRefused(() -> facts("other", REF.name(), 3, true).require(REF, 3, Access.EXEC), Mismatch.WORKSPACE);
        assertRefused(() -> facts(REF.workspace(), "other", 3, true).require(REF, 3, Access.LOGS), Mismatch.NAME);
        assertRefused(() -> facts(REF.workspace(), null, 3, true).require(REF, 3, Access.LOGS), Mismatch.NAME);
    }

    @Test
    void theIdentityIsCheckedBeforeTheGenerationAndTheGenerationBeforeRunning() {
        assertRefused(() -> facts("other", REF.name(), 9, false).require(REF, 3, Access.EXEC), Mismatch.WORKSPACE);
        assertRefused(
                () -> facts(REF.workspace(), REF.name(), 9, false).require(REF, 3, Access.EXEC), Mismatch.GENERATION);
    }
}
