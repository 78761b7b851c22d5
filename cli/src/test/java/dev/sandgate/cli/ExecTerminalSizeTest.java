package dev.sandgate.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.TerminalSize;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ExecTerminalSizeTest {
    @Test
    void aTerminalIsSizedByColumnsAndLinesFromTheEnvironment() {
        assertThat(ExecCommand.terminalSize(Map.of("COLUMNS", "120", "LINES", "40")))
                .contains(TerminalSize.newBuilder().setColumns(120).setRows(40).build());
    }

    @Test
    void noSizeIsSentUnlessBothAreWholeNumbersInRange() {
        assertThat(ExecCommand.terminalSize(Map.of("COLUMNS", "120"))).isEmpty();
        assertThat(ExecCommand.terminalSize(Map.of("COLUMNS", "wide", "LINES", "40")))
                .isEmpty();
        assertThat(ExecCommand.terminalSize(Map.of("COLUMNS", "0", "LINES", "40")))
                .isEmpty();
        assertThat(ExecCommand.terminalSize(Map.of("COLUMNS", "65536", "LINES", "40")))
                .isEmpty();
    }
}
