package dev.sandgate.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

class ClosedLoopTest {
    @Test
    void everyClientMakesItsCallsInOrder() throws InterruptedException {
        Set<String> made = ConcurrentHashMap.newKeySet();

        ClosedLoop.Outcome outcome =
                ClosedLoop.run(4, 25, Duration.ofMinutes(1), (client, index) -> made.add(client + "/" + index));

        assertThat(made).hasSize(100).contains("0/0", "3/24");
        assertThat(outcome.completed()).containsExactly(25, 25, 25, 25);
        assertThat(outcome.latencies().count()).isEqualTo(100);
        assertThat(outcome.errors()).isZero();
    }

    @Test
    void failedCallsAreCountedAndLeftOutOfTheLatencies() throws InterruptedException {
        ClosedLoop.Outcome outcome = ClosedLoop.run(2, 10, Duration.ofMinutes(1), (client, index) -> {
            if (index % 2 == 1) {
                throw new IllegalStateException("odd call " + index);
            }
        });

        assertThat(outcome.errors()).isEqualTo(10);
        assertThat(outcome.latencies().count()).isEqualTo(10);
        assertThat(outcome.firstError()).contains("odd call");
    }

    @Test
    void makesNoMoreCallsOnceThePhaseLimitHasPassed() throws InterruptedException {
        ClosedLoop.Outcome outcome = ClosedLoop.run(3, 1_000, Duration.ZERO, (client, index) -> {
            throw new AssertionError("no call may start after the phase limit");
        });

        assertThat(outcome.completed()).containsExactly(0, 0, 0);
        assertThat(outcome.latencies().count()).isZero();
        assertThat(outcome.errors()).isZero();
    }

    @Test
    void pacedCallsStartOnTheirScheduleAndALateCallCountsItsWaitInItsLatency() throws InterruptedException {
        // One client, 100 calls/s offered: call i is due at i * 10 ms. Each call takes 30 ms, so the client falls
        // behind and call i starts about 20 * i ms after it was due; its latency must include that wait.
        ClosedLoop.Outcome outcome = ClosedLoop.paced(1, 5, Duration.ofMinutes(1), 100, (client, index) -> {
            Thread.sleep(30);
        });

        long[] samples = outcome.latencies().samples();
        assertThat(samples).hasSize(5);
        long lastMillis = Duration.ofNanos(
                        java.util.Arrays.stream(samples).max().orElseThrow())
                .toMillis();
        assertThat(lastMillis).as("the last call waited for four late calls").isGreaterThanOrEqualTo(30 + 4 * 20);
        assertThat(Duration.ofNanos(outcome.elapsedNanos()).toMillis()).isGreaterThanOrEqualTo(5 * 30);
    }

    @Test
    void aPacedPhaseRecordsWhenEachCallWasDueWithItsLatency() throws InterruptedException {
        // Two clients share 100 calls/s: call g (counting across clients) is due at g * 10 ms.
        ClosedLoop.Outcome outcome = ClosedLoop.paced(2, 3, Duration.ofMinutes(1), 100, (client, index) -> {});

        ClosedLoop.Timeline timeline = outcome.timeline().orElseThrow();
        assertThat(timeline.calls().stream()
                        .map(call -> Math.round(call.dueNanos() / 1e6))
                        .sorted())
                .containsExactly(0L, 10L, 20L, 30L, 40L, 50L);
        assertThat(timeline.calls())
                .hasSize(6)
                .allSatisfy(call -> assertThat(call.latencyNanos()).isPositive());
        assertThat(timeline.startUptimeMillis()).isPositive();
        assertThat(ClosedLoop.run(1, 1, Duration.ofMinutes(1), (client, index) -> {})
                        .timeline())
                .as("a closed loop has no schedule")
                .isEmpty();
    }

    @Test
    void pacedCallsAreNotSentBeforeTheyAreDue() throws InterruptedException {
        // Two clients share 50 calls/s: calls are due every 20 ms, so ten of them take at least 180 ms.
        ClosedLoop.Outcome outcome = ClosedLoop.paced(2, 5, Duration.ofMinutes(1), 50, (client, index) -> {});

        assertThat(outcome.latencies().count()).isEqualTo(10);
        assertThat(Duration.ofNanos(outcome.elapsedNanos()).toMillis()).isGreaterThanOrEqualTo(180);
    }

    @Test
    void aPhaseReportsTheCpuTimeItsCallsUsed() throws InterruptedException {
        ClosedLoop.Outcome outcome = ClosedLoop.run(2, 50, Duration.ofMinutes(1), (client, index) -> {
            long until = System.nanoTime() + 200_000; // 0.2 ms of spinning per call
            while (System.nanoTime() < until) {
                Thread.onSpinWait();
            }
        });

        assertThat(outcome.cpuNanos()).isGreaterThanOrEqualTo(100 * 200_000L / 2);
        assertThat(outcome.cpuMillisPerCall()).isPositive().isFinite();
    }
}
