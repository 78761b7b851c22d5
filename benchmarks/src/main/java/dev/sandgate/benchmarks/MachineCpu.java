package dev.sandgate.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * How busy the whole machine was, from the kernel's CPU counters ({@code /proc/stat}, Linux only), so that a phase can
 * say how much of the machine other processes took while it ran. On a shared machine that, more than anything in the
 * process, decides the tail of the latencies.
 *
 * <p>The counters are in clock ticks, per state, summed over every processor: a share is a ratio of ticks, so the tick
 * rate does not matter. Busy is user, nice, system, irq and softirq; steal (the hypervisor running something else on
 * this machine's processors) counts as taken too. Idle and iowait are free.
 */
final class MachineCpu {
    private static final Path STAT = Path.of("/proc/stat");

    private MachineCpu() {}

    /**
     * The counters at one moment: ticks taken (busy or stolen) and ticks in all, summed over {@code processors}, the
     * processors the kernel counts (a container may be given fewer than that).
     */
    record Sample(long taken, long total, int processors) {}

    /** The counters now; empty where there is no {@code /proc/stat} or it cannot be read. */
    static Optional<Sample> sample() {
        try {
            return parse(Files.readAllLines(STAT));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /**
     * The text of {@code /proc/stat}: the aggregate line {@code cpu user nice system idle iowait irq softirq steal
     * ...} first, then one {@code cpuN} line per processor. Kernels before 2.6.11 give fewer fields; text without the
     * aggregate line or any processor's line gives empty.
     */
    static Optional<Sample> parse(List<String> lines) {
        if (lines.isEmpty()) {
            return Optional.empty();
        }
        String[] fields = lines.get(0).trim().split("\\s+", -1);
        if (fields.length < 5 || !fields[0].equals("cpu")) {
            return Optional.empty();
        }
        int processors =
                (int) lines.stream().filter(MachineCpu::isProcessorLine).count();
        if (processors == 0) {
            return Optional.empty();
        }
        long[] ticks = new long[8];
        for (int i = 0; i < ticks.length && i + 1 < fields.length; i++) {
            ticks[i] = Long.parseLong(fields[i + 1]);
        }
        long user = ticks[0], nice = ticks[1], system = ticks[2], idle = ticks[3], iowait = ticks[4];
        long irq = ticks[5], softirq = ticks[6], steal = ticks[7];
        long taken = user + nice + system + irq + softirq + steal;
        return Optional.of(new Sample(taken, taken + idle + iowait, processors));
    }

    private static boolean isProcessorLine(String line) {
        return line.length() > 3 && line.startsWith("cpu") && Character.isDigit(line.charAt(3));
    }

    /**
     * The share of the machine's processors that other processes took between two samples: the share taken in all,
     * less this process's CPU time over the same interval as a share of every processor the kernel counts; never below
     * 0. NaN when either sample is missing, no tick passed, or the process's CPU time is unknown.
     *
     * @param processCpuNanos this process's CPU time over the interval, or -1 if unknown
     * @param elapsedNanos the interval's wall time
     */
    static double othersShare(
            Optional<Sample> before, Optional<Sample> after, long processCpuNanos, long elapsedNanos) {
        if (before.isEmpty() || after.isEmpty() || processCpuNanos < 0 || elapsedNanos <= 0) {
            return Double.NaN;
        }
        int processors = after.get().processors();
        long total = after.get().total() - before.get().total();
        long taken = after.get().taken() - before.get().taken();
        if (total <= 0) {
            return Double.NaN;
        }
        double machine = (double) taken / total;
        double own = processCpuNanos / ((double) elapsedNanos * processors);
        return Math.max(0, machine - own);
    }
}
