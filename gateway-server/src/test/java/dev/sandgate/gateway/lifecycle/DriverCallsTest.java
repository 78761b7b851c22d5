package dev.sandgate.gateway.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** How a driver call is bounded by the driver timeout follows from the deadline passed with it, nothing else. */
class DriverCallsTest {
    private static GatewayException pending() {
        return new GatewayException(ErrorReason.TRANSITION_PENDING, "pending");
    }

    @Test
    @DisplayName("a call for a waiting client runs on its thread and tells it once, at the timeout, while it goes on")
    void watchedCallAnswersTheClientAtTheTimeoutAndFinishes() throws Exception {
        List<GatewayException> told = new CopyOnWriteArrayList<>();
        CountDownLatch toldOnce = new CountDownLatch(1);
        CallDeadline deadline = CallDeadline.waiting(Duration.ofSeconds(5)).answering(e -> {
            told.add(e);
            toldOnce.countDown();
        });
        Thread caller = Thread.currentThread();
        try (DriverCalls calls = new DriverCalls("fake", Duration.ofMillis(100))) {
            String result = calls.call(
                    () -> {
                        assertThat(Thread.currentThread()).isSameAs(caller);
                        assertThat(toldOnce.await(5, TimeUnit.SECONDS)).isTrue();
                        return "late";
                    },
                    deadline,
                    DriverCallsTest::pending);

            assertThat(result).isEqualTo("late");
            assertThat(told)
                    .singleElement()
                    .extracting(GatewayException::reason)
                    .isEqualTo(ErrorReason.TRANSITION_PENDING);
        }
    }

    @Test
    @DisplayName("a call nobody waits for runs on a driver-call thread and is DEADLINE_EXCEEDED at the timeout")
    void backgroundCallStopsWaitingAtTheTimeout() {
        Thread caller = Thread.currentThread();
        CountDownLatch release = new CountDownLatch(1);
        try (DriverCalls calls = new DriverCalls("fake", Duration.ofMillis(100))) {
            assertThatThrownBy(() -> calls.call(
                            () -> {
                                assertThat(Thread.currentThread()).isNotSameAs(caller);
                                release.await(5, TimeUnit.SECONDS);
                                return "late";
                            },
                            CallDeadline.waiting(Duration.ofSeconds(5)),
                            DriverCallsTest::pending))
                    .isInstanceOfSatisfying(
                            DriverException.class,
                            e -> assertThat(e.code()).isEqualTo(DriverErrorCode.DEADLINE_EXCEEDED));
        } finally {
            release.countDown();
        }
    }

    @Test
    @DisplayName("a call that answers in time tells the waiting client nothing")
    void timelyCallTellsNothing() throws Exception {
        List<GatewayException> told = new CopyOnWriteArrayList<>();
        try (DriverCalls calls = new DriverCalls("fake", Duration.ofMillis(100))) {
            String result = calls.call(
                    () -> "now",
                    CallDeadline.waiting(Duration.ofSeconds(5)).answering(told::add),
                    DriverCallsTest::pending);
            Thread.sleep(300);

            assertThat(result).isEqualTo("now");
            assertThat(told).isEmpty();
        }
    }
}
