package dev.sandgate.driver.container;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.SandboxState;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ContainerViewTest {
    private static ContainerView view(String status, long exitCode, boolean oomKilled, String error) {
        return new ContainerView(
                "c0ffee",
                "sandgate-a-b-12345678-g1",
                Map.of(),
                status,
                exitCode,
                oomKilled,
                error,
                Instant.EPOCH,
                new ContainerRecipe("busybox", List.of(), List.of(), List.of(), Map.of()));
    }

    @ParameterizedTest(name = "{0}, exit {1}, oom {2}, error \"{3}\" -> {4} ({5})")
    @CsvSource(delimiter = '|', textBlock = """
            running    | 0   | false |                    | RUNNING      |
            paused     | 0   | false |                    | RUNNING      | paused
            created    | 0   | false |                    | PROVISIONING |
            created    | 127 | false | exec: not found    | FAILED       | exec: not found
            restarting | 0   | false |                    | PROVISIONING | restarting
            removing   | 0   | false |                    | STOPPING     | removing
            exited     | 0   | false |                    | STOPPED      | exited with code 0
            exited     | 143 | false |                    | STOPPED      | exited with code 143
            exited     | 137 | false |                    | STOPPED      | exited with code 137
            exited     | 3   | false |                    | FAILED       | exited with code 3
            exited     | 137 | true  |                    | FAILED       | killed for exceeding its memory limit (exit code 137)
            dead       | 0   | false |                    | FAILED       | dead
            frozen     | 0   | false |                    | UNKNOWN      | frozen
            """)
    void theEnginesStateMapsToASandboxStateWithADetail(
            String status, long exitCode, boolean oomKilled, String error, SandboxState state, String detail) {
        ContainerView view = view(status, exitCode, oomKilled, error == null ? "" : error);

        assertThat(view.state()).isEqualTo(state);
        assertThat(view.detail()).isEqualTo(detail == null ? "" : detail);
    }

    @ParameterizedTest
    @CsvSource({"running, true", "paused, true", "restarting, true", "created, false", "exited, false"})
    void anExecutionIsUnderWayWhileRunningPausedOrRestarting(String status, boolean running) {
        assertThat(view(status, 0, false, "").running()).isEqualTo(running);
    }
}
