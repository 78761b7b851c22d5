package dev.sandgate.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

class LatenciesTest {
    private static final long MILLISECOND = 1_000_000;

    @Test
    void percentilesAreNearestRanksOfTheSortedSamples() {
        long[] samples =
                LongStream.rangeClosed(1, 100).map(i -> (101 - i) * MILLISECOND).toArray();

        Latencies latencies = new Latencies(samples);

        assertThat(latencies.percentileMillis(50)).isEqualTo(50.0);
        assertThat(latencies.percentileMillis(99)).isEqualTo(99.0);
        assertThat(latencies.percentileMillis(100)).isEqualTo(100.0);
        assertThat(latencies.maxMillis()).isEqualTo(100.0);
    }

    @Test
    void aSingleSampleIsEveryPercentile() {
        Latencies latencies = new Latencies(new long[] {3 * MILLISECOND});

        assertThat(latencies.percentileMillis(1)).isEqualTo(3.0);
        assertThat(latencies.percentileMillis(99)).isEqualTo(3.0);
    }

    @Test
    void noSamplesHaveNoPercentiles() {
        assertThat(new Latencies(new long[0]).percentileMillis(50)).isNaN();
    }

    @Test
    void rejectsAPercentileOutsideZeroToHundred() {
        assertThatThrownBy(() -> new Latencies(new long[] {1}).percentileMillis(0))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
