package dev.sandgate.driver.toolkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class BackoffTest {
    @Test
    void pausesDoubleUpToTheLongest() {
        var backoff = new Backoff(Duration.ofMillis(1), Duration.ofMillis(3));
        backoff.pause("x");
        assertThat(backoff.next()).isEqualTo(Duration.ofMillis(2));
        backoff.pause("x");
        assertThat(backoff.next()).isEqualTo(Duration.ofMillis(3));
        assertThat(backoff.pauseUninterruptibly()).isFalse();
        assertThat(backoff.next()).isEqualTo(Duration.ofMillis(3));
    }

    @Test
    void anInterruptedPauseIsUnavailableNamingWhatItWaitedForAndKeepsTheInterrupt() {
        var backoff = new Backoff(Duration.ofMillis(1), Duration.ofMillis(1));
        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(() -> backoff.pause("QEMU"))
                    .isInstanceOfSatisfying(
                            DriverException.class, e -> assertThat(e.code()).isEqualTo(DriverErrorCode.UNAVAILABLE))
                    .hasMessageContaining("QEMU");
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
    }

    @Test
    void anUninterruptiblePauseReportsAndClearsTheInterrupt() {
        var backoff = new Backoff(Duration.ofMillis(1), Duration.ofMillis(1));
        Thread.currentThread().interrupt();
        assertThat(backoff.pauseUninterruptibly()).isTrue();
        assertThat(Thread.currentThread().isInterrupted()).isFalse();
    }

    @Test
    void refusesAnEmptyOrInvertedRange() {
        assertThatThrownBy(() -> new Backoff(Duration.ZERO, Duration.ofMillis(1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new Backoff(Duration.ofMillis(2), Duration.ofMillis(1)))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
