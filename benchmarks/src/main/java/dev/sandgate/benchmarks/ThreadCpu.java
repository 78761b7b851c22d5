package dev.sandgate.benchmarks;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.util.HashMap;
import java.util.Map;

/**
 * CPU time of this JVM's live threads, summed by who they work for: threads named with {@code clientPrefix} (the
 * benchmark's clients) or any other thread (the gateway under test). A thread that ends between two snapshots drops
 * out of both sums; the JVM's own threads (GC, compiler) are in neither, only in the process's total.
 */
final class ThreadCpu {
    private final Map<Long, Long> client;
    private final Map<Long, Long> others;
    private final long processNanos;

    private ThreadCpu(Map<Long, Long> client, Map<Long, Long> others, long processNanos) {
        this.client = client;
        this.others = others;
        this.processNanos = processNanos;
    }

    /** CPU used between two snapshots, in nanoseconds: client threads, other threads, and the whole process. */
    record Used(long clientNanos, long othersNanos, long processNanos) {}

    static ThreadCpu snapshot(String clientPrefix) {
        Map<Long, Long> client = new HashMap<>();
        Map<Long, Long> others = new HashMap<>();
        if (ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean threads
                && threads.isThreadCpuTimeSupported()) {
            long[] ids = threads.getAllThreadIds();
            long[] cpu = threads.getThreadCpuTime(ids);
            ThreadInfo[] infos = threads.getThreadInfo(ids);
            for (int i = 0; i < ids.length; i++) {
                if (infos[i] == null || cpu[i] < 0) {
                    continue;
                }
                (infos[i].getThreadName().startsWith(clientPrefix) ? client : others).put(ids[i], cpu[i]);
            }
        }
        return new ThreadCpu(client, others, ClosedLoop.processCpuNanos());
    }

    /** What was used from {@code before} to this snapshot. */
    Used since(ThreadCpu before) {
        return new Used(
                delta(before.client, client),
                delta(before.others, others),
                processNanos < 0 || before.processNanos < 0 ? -1 : processNanos - before.processNanos);
    }

    private static long delta(Map<Long, Long> before, Map<Long, Long> after) {
        long sum = 0;
        for (Map.Entry<Long, Long> entry : after.entrySet()) {
            sum += entry.getValue() - before.getOrDefault(entry.getKey(), 0L);
        }
        return sum;
    }
}
