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
}
