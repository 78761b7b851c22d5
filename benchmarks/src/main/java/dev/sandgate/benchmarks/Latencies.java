package dev.sandgate.benchmarks;

import java.util.Arrays;

/**
 * Latencies of one phase, in nanoseconds, and their percentiles by the nearest-rank method over the sorted samples (no
 * bucketing: every sample is kept, which the bounded call counts make affordable).
 */
final class Latencies {
    private final long[] sorted;

    Latencies(long[] samples) {
        this.sorted = samples.clone();
        Arrays.sort(this.sorted);
    }

    /** The samples in ascending order. */
    long[] samples() {
        return sorted.clone();
    }

    int count() {
        return sorted.length;
    }

    /** The smallest sample that is at least {@code percentile} percent of the samples; NaN when there are none. */
    double percentileMillis(double percentile) {
        if (percentile <= 0 || percentile > 100) {
            throw new IllegalArgumentException("percentile must be in (0, 100], got " + percentile);
        }
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(percentile / 100.0 * sorted.length);
        return sorted[Math.max(rank, 1) - 1] / 1e6;
    }

    double maxMillis() {
        return sorted.length == 0 ? Double.NaN : sorted[sorted.length - 1] / 1e6;
    }
}
