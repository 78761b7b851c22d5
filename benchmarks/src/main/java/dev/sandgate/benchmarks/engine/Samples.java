package dev.sandgate.benchmarks.engine;

import java.util.Arrays;

/** Latency samples of one operation on one side, in nanoseconds; percentiles by the nearest-rank method. */
final class Samples {
    private long[] values = new long[16];
    private int count;

    void add(long nanos) {
        if (nanos < 0) {
            throw new IllegalArgumentException("a latency cannot be negative: " + nanos);
        }
        if (count == values.length) {
            values = Arrays.copyOf(values, count * 2);
        }
        values[count++] = nanos;
    }

    int count() {
        return count;
    }

    /** The smallest sample that is at least {@code percentile} percent of the samples, in milliseconds. */
    double percentileMillis(double percentile) {
        if (percentile <= 0 || percentile > 100) {
            throw new IllegalArgumentException("percentile must be in (0, 100], got " + percentile);
        }
        if (count == 0) {
            throw new IllegalStateException("no samples");
        }
        long[] sorted = Arrays.copyOf(values, count);
        Arrays.sort(sorted);
        int rank = (int) Math.ceil(percentile / 100.0 * count);
        return sorted[Math.max(rank, 1) - 1] / 1e6;
    }
}
