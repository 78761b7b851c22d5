package dev.sandgate.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class MachineCpuTest {
    @Test
    void theAggregateLineCountsBusyAndStolenTicksAsTakenAndIdleAndIowaitAsFree() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        Optional<MachineCpu.Sample> sample = MachineCpu.parse("cpu  100 2 30 500 40 5 6 7 0 0");

        assertThat(sample)
                .contains(new MachineCpu.Sample(100 + 2 + 30 + 5 + 6 + 7, 100 + 2 + 30 + 5 + 6 + 7 + 500 + 40));
    }

    @Test
    void aLineOfOneProcessorOrOfSomethingElseIsNotTheAggregate() {
        assertThat(MachineCpu.parse("cpu0 100 2 30 500 40 5 6 7 0 0")).isEmpty();
        assertThat(MachineCpu.parse("intr 12345")).isEmpty();
    }

    @Test
    void othersShareIsTheMachinesTakenShareLessThisProcesssShare() {
        var before = Optional.of(new MachineCpu.Sample(100, 1_000));
        var after = Optional.of(new MachineCpu.Sample(700, 2_000)); // 60 % of the machine taken

        // This process: 1 s of CPU in 1 s on 2 processors, 50 % of the machine.
        double share = MachineCpu.othersShare(before, after, 1_000_000_000L, 1_000_000_000L, 2);

        assertThat(share).isCloseTo(0.10, within(1e-9));
    }

    @Test
    void othersShareIsNeverNegativeAndUnknownWithoutBothSamplesOrTheProcesssTime() {
        var before = Optional.of(new MachineCpu.Sample(100, 1_000));
        var after = Optional.of(new MachineCpu.Sample(200, 2_000));

        assertThat(MachineCpu.othersShare(before, after, 2_000_000_000L, 1_000_000_000L, 2))
                .isZero();
        assertThat(MachineCpu.othersShare(Optional.empty(), after, 0, 1_000_000_000L, 2))
                .isNaN();
        assertThat(MachineCpu.othersShare(before, after, -1, 1_000_000_000L, 2)).isNaN();
        assertThat(MachineCpu.othersShare(before, before, 0, 1_000_000_000L, 2)).isNaN();
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

            double share = MachineCpu.othersShare(
                    before, after, cpu, elapsed, Runtime.getRuntime().availableProcessors());

            // The spinner alone wants one whole processor; whatever else runs only adds to the share.
            assertThat(share)
                    .isGreaterThanOrEqualTo(0.5 / Runtime.getRuntime().availableProcessors())
                    .isLessThanOrEqualTo(1.0);
        } finally {
            spinner.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }
}
