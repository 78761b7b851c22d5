package dev.sandgate.driver.vm;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class GuestReportTest {
    @Test
    void protocolLinesAreReadAmongConsoleNoiseAndCarriageReturns() {
        GuestReport report = GuestReport.parse("""
                [    2.1] some kernel line\r
                sandgate: stage kernel-started\r
                sandgate: ready generation=4\r
                """);

        assertThat(report.lines()).containsExactly("stage kernel-started", "ready generation=4");
        assertThat(report.readyAt(4)).isTrue();
        assertThat(report.readyAt(3)).isFalse();
    }

    @Test
    void aLineStillBeingWrittenIsNotRead() {
        GuestReport report = GuestReport.parse("sandgate: stage kernel-started\nsandgate: ready gen");

        assertThat(report.lines()).containsExactly("stage kernel-started");
    }

    @Test
    void exitStatusAndFailureAreReported() {
        GuestReport report = GuestReport.parse("sandgate: ready generation=1\nsandgate: exited status=3\n");
        GuestReport failed = GuestReport.parse("sandgate: failed no workspace disk\n");

        assertThat(report.exitStatus()).isEqualTo(OptionalInt.of(3));
        assertThat(report.failure()).isEmpty();
        assertThat(failed.failure()).contains("no workspace disk");
        assertThat(failed.readyGeneration()).isEmpty();
    }
}
