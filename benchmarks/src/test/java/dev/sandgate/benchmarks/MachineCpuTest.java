package dev.sandgate.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sandgate.testing.ProcessTest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

@ProcessTest
class MachineCpuTest {
    @Test
    void theAggregateLineCountsBusyAndStolenTicksAsTakenAndIdleAndIowaitAsFree() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        Optional<MachineCpu.Sample> sample = MachineCpu.parse(List.of(
                "cpu  100 2 30 500 40 5 6 7 0 0",
                "cpu0 50 1 15 250 20 2 3 3 0 0",
                "cpu1 50 1 15 250 20 3 3 4 0 0",
                "intr 12345"));

        long taken = 100 + 2 + 30 + 5 + 6 + 7;
        assertThat(sample).contains(new MachineCpu.Sample(taken, taken + 500 + 40, 2));
    }

    @Test
    void textWithoutTheAggregateLineOrAnyProcessorsLineTellsNothing() {
        assertThat(MachineCpu.parse(List.of("cpu0 100 2 30 500 40 5 6 7 0 0", "intr 12345")))
                .isEmpty();
        assertThat(MachineCpu.parse(List.of("cpu  100 2 30 500 40 5 6 7 0 0", "intr 12345")))
                .isEmpty();
        assertThat(MachineCpu.parse(List.of())).isEmpty();
    }

    @Test
    void othersShareIsTheMachinesTakenShareLessThisProcesssShare() {
        var before = Optional.of(new MachineCpu.Sample(100, 1_000, 2));
        var after = Optional.of(new MachineCpu.Sample(700, 2_000, 2)); // 60 % of the machine taken

        // This process: 1 s of CPU in 1 s on 2 processors, 50 % of the machine.
        double share = MachineCpu.othersShare(before, after, 1_000_000_000L, 1_000_000_000L);

        assertThat(share).isCloseTo(0.10, within(1e-9));
    }

    @Test
    void thisProcesssShareIsOfEveryProcessorTheKernelCountsNotOfThoseTheJvmWasGiven() {
        var before = Optional.of(new MachineCpu.Sample(100, 1_000, 8));
        var after = Optional.of(new MachineCpu.Sample(700, 2_000, 8)); // 60 % of 8 processors taken

        // This process: 2 s of CPU in 1 s, a quarter of 8 processors, whatever availableProcessors() says.
        double share = MachineCpu.othersShare(before, after, 2_000_000_000L, 1_000_000_000L);

        assertThat(share).isCloseTo(0.35, within(1e-9));
    }

    @Test
    void othersShareIsNeverNegativeAndUnknownWithoutBothSamplesOrTheProcesssTime() {
        var before = Optional.of(new MachineCpu.Sample(100, 1_000, 2));
        var after = Optional.of(new MachineCpu.Sample(200, 2_000, 2));

        assertThat(MachineCpu.othersShare(before, after, 2_000_000_000L, 1_000_000_000L))
                .isZero();
        assertThat(MachineCpu.othersShare(Optional.empty(), after, 0, 1_000_000_000L))
                .isNaN();
        assertThat(MachineCpu.othersShare(before, after, -1, 1_000_000_000L)).isNaN();
        assertThat(MachineCpu.othersShare(before, before, 0, 1_000_000_000L)).isNaN();
    }

    @Test
    void aProcessSpinningAlongsideShowsAsOthersShare() throws Exception {
        if (!Files.isReadable(Path.of("/proc/stat"))) {
            assertThat(MachineCpu.sample()).as("no /proc/stat: nothing to tell").isEmpty();
            return;
        }
        Process spinner = new ProcessBuilder("sh", "-c", "while :; do :; done").start();
        try {
            Thread.sleep(200); // let it start spinning
            Optional<MachineCpu.Sample> before = MachineCpu.sample();
            long cpuBefore = ClosedLoop.processCpuNanos();
            long start = System.nanoTime();
            Thread.sleep(1_000);
            long elapsed = System.nanoTime() - start;
            long cpu = ClosedLoop.processCpuNanos() - cpuBefore;
            Optional<MachineCpu.Sample> after = MachineCpu.sample();

            double share = MachineCpu.othersShare(before, after, cpu, elapsed);

            // The spinner alone wants one whole processor; whatever else runs only adds to the share.
            assertThat(share)
                    .isGreaterThanOrEqualTo(0.5 / after.orElseThrow().processors())
                    .isLessThanOrEqualTo(1.0);
        } finally {
            spinner.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }
}
