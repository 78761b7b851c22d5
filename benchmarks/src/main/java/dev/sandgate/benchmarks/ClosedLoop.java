package dev.sandgate.benchmarks;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The load generator: {@code clients} threads each make up to {@code callsPerClient} calls one after the other, until
 * all are made or the time limit passes. Bounded in count and in time.
 *
 * <p>Closed loop ({@link #run}): a client sends its next call when the previous one has answered, so the offered load
 * follows the server's speed and latency grows with the number of clients. Paced ({@link #paced}): calls are scheduled
 * at a fixed aggregate rate, call {@code g} (counting across clients) at {@code g / rate} seconds after the start, and
 * a call's latency runs from its scheduled time, so time spent waiting for a late previous call counts too (no
 * coordinated omission); the rate is then the offered load, and the throughput falls short of it if the server cannot
 * keep up.
 */
final class ClosedLoop {
    private ClosedLoop() {}

    /** One call of one client; {@code index} counts that client's calls from 0. */
    @FunctionalInterface
    interface Call {
        void run(int client, int index) throws Exception;
    }

    /**
     * The outcome of a phase.
     *
     * @param completed per client, how many calls were made (successful or not) before the limits
     * @param errors calls that threw
     * @param firstError the first failure's description, or null
     * @param cpuNanos the CPU time (user and system) this whole process used during the phase: gateway, driver and
     *     clients together; -1 where the JVM cannot tell
     * @param othersCpuShare the share of the machine's processors that other processes took during the phase
     *     ({@link MachineCpu#othersShare}); NaN where the machine cannot tell
     */
    record Outcome(
            Latencies latencies,
            List<Integer> completed,
            long errors,
            String firstError,
            long elapsedNanos,
            long cpuNanos,
            double othersCpuShare,
            Optional<Timeline> timeline) {
        double throughputPerSecond() {
            return latencies.count() / (elapsedNanos / 1e9);
        }

        /** The process's CPU time per call made (successful or not), in milliseconds; NaN if unknown. */
        double cpuMillisPerCall() {
            long calls = latencies.count() + errors;
            return cpuNanos < 0 || calls == 0 ? Double.NaN : cpuNanos / 1e6 / calls;
        }
    }

    /**
     * Every successful call of a paced phase in the order made by each client: when it was due, counted from the
     * phase's start, and its latency, both in nanoseconds.
     *
     * @param startUptimeMillis when the phase started, as the JVM's uptime (which {@code -Xlog:gc:...:uptime} prints)
     */
    record Timeline(long startUptimeMillis, List<Scheduled> calls) {
        Timeline {
            calls = List.copyOf(calls);
        }

        /** One call: when it was due after the phase's start, and its latency. */
        record Scheduled(long dueNanos, long latencyNanos) {}
    }

    /** The CPU time this process has used so far, in nanoseconds; -1 if the JVM cannot tell. */
    static long processCpuNanos() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        return -1;
    }

    static Outcome run(int clients, int callsPerClient, Duration timeLimit, Call call) throws InterruptedException {
        return run(clients, callsPerClient, timeLimit, 0, call);
    }

    /** Like {@link #run}, but with the calls scheduled at {@code ratePerSecond} in aggregate. */
    static Outcome paced(int clients, int callsPerClient, Duration timeLimit, double ratePerSecond, Call call)
            throws InterruptedException {
        if (!(ratePerSecond > 0)) {
            throw new IllegalArgumentException("the rate must be positive");
        }
        return run(clients, callsPerClient, timeLimit, ratePerSecond, call);
    }

    private static Outcome run(int clients, int callsPerClient, Duration timeLimit, double rate, Call call)
            throws InterruptedException {
        double nanosPerCall = rate > 0 ? 1e9 / rate : 0;
        CountDownLatch ready = new CountDownLatch(clients);
        CountDownLatch go = new CountDownLatch(1);
        long[][] samples = new long[clients][callsPerClient];
        long[][] due = new long[clients][rate > 0 ? callsPerClient : 0];
        int[] completed = new int[clients];
        long[] errors = new long[clients];
        AtomicReference<String> firstError = new AtomicReference<>();
        long[] window = new long[2];
        List<Thread> threads = new ArrayList<>(clients);
        for (int c = 0; c < clients; c++) {
            int client = c;
            threads.add(Thread.ofPlatform().name("bench-client-" + client).start(() -> {
                ready.countDown();
                awaitQuietly(go);
                long deadline = window[0] + timeLimit.toNanos();
                int index = 0;
                for (; index < callsPerClient && System.nanoTime() < deadline; index++) {
                    long start = System.nanoTime();
                    if (rate > 0) {
                        long scheduled = window[0] + (long) ((index * (double) clients + client) * nanosPerCall);
                        while (scheduled - System.nanoTime() > 0) {
                            LockSupport.parkNanos(scheduled - System.nanoTime());
                        }
                        start = scheduled;
                    }
                    try {
                        call.run(client, index);
                        int at = index - (int) errors[client];
                        samples[client][at] = System.nanoTime() - start;
                        if (rate > 0) {
                            due[client][at] = start - window[0];
                        }
                    } catch (Exception e) {
                        errors[client]++;
                        firstError.compareAndSet(null, e.toString());
                    }
                }
                completed[client] = index;
            }));
        }
        ready.await();
        Optional<MachineCpu.Sample> machineBefore = MachineCpu.sample();
        long cpuBefore = processCpuNanos();
        window[0] = System.nanoTime();
        long startUptime = ManagementFactory.getRuntimeMXBean().getUptime();
        go.countDown();
        for (Thread thread : threads) {
            thread.join();
        }
        long elapsed = System.nanoTime() - window[0];
        long cpuAfter = processCpuNanos();
        Optional<MachineCpu.Sample> machineAfter = MachineCpu.sample();
        long cpu = cpuBefore < 0 || cpuAfter < 0 ? -1 : cpuAfter - cpuBefore;
        double others = MachineCpu.othersShare(machineBefore, machineAfter, cpu, elapsed);
        int successes = 0;
        long failed = 0;
        for (int c = 0; c < clients; c++) {
            successes += completed[c] - (int) errors[c];
            failed += errors[c];
        }
        long[] all = new long[successes];
        long[] allDue = new long[rate > 0 ? successes : 0];
        int at = 0;
        for (int c = 0; c < clients; c++) {
            int ok = completed[c] - (int) errors[c];
            System.arraycopy(samples[c], 0, all, at, ok);
            if (rate > 0) {
                System.arraycopy(due[c], 0, allDue, at, ok);
            }
            at += ok;
        }
        Optional<Timeline> timeline = Optional.empty();
        if (rate > 0) {
            List<Timeline.Scheduled> calls = new ArrayList<>(successes);
            for (int i = 0; i < successes; i++) {
                calls.add(new Timeline.Scheduled(allDue[i], all[i]));
            }
            timeline = Optional.of(new Timeline(startUptime, calls));
        }
        return new Outcome(
                new Latencies(all),
                java.util.Arrays.stream(completed).boxed().toList(),
                failed,
                firstError.get(),
                elapsed,
                cpu,
                others,
                timeline);
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
