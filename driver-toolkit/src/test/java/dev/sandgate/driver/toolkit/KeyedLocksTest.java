package dev.sandgate.driver.toolkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class KeyedLocksTest {
    private final KeyedLocks locks = new KeyedLocks();

    @Test
    void aSecondHolderOfTheSameKeyWaitsAndGivesUpAfterItsTimeout() throws Exception {
        var release = new CountDownLatch(1);
        CompletableFuture<String> first = holdUntilReleased("a", release, "first");

        DriverException refused = catchThrowableOfType(
                DriverException.class, () -> locks.call("a", Duration.ofMillis(50), () -> "second"));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.DEADLINE_EXCEEDED);
        release.countDown();
        assertThat(first.get(5, TimeUnit.SECONDS)).isEqualTo("first");
        assertThat(locks.call("a", Duration.ofSeconds(5), () -> "third")).isEqualTo("third");
    }

    @Test
    void differentKeysDoNotWaitForEachOther() throws Exception {
        var release = new CountDownLatch(1);
        CompletableFuture<String> first = holdUntilReleased("a", release, "a");

        assertThat(locks.call("b", Duration.ofMillis(50), () -> "b")).isEqualTo("b");

        release.countDown();
        first.get(5, TimeUnit.SECONDS);
    }

    @Test
    void locksAreDroppedOnceNobodyHoldsThem() {
        locks.call("a", Duration.ofSeconds(1), () -> "a");
        assertThatThrownBy(() -> locks.call("b", Duration.ofSeconds(1), () -> {
                    throw new IllegalStateException("boom");
                }))
                .isInstanceOf(IllegalStateException.class);

        assertThat(locks.size()).isZero();
    }

    @Test
    void aKeyCountsAsHeldOnlyWhileAnOperationHoldsItsLock() throws Exception {
        assertThat(locks.isHeld("a")).isFalse();
        var release = new CountDownLatch(1);
        CompletableFuture<String> first = holdUntilReleased("a", release, "a");

        assertThat(locks.isHeld("a")).isTrue();
        assertThat(locks.isHeld("b")).isFalse();

        release.countDown();
        first.get(5, TimeUnit.SECONDS);
        assertThat(locks.isHeld("a")).isFalse();
        assertThat(locks.call("a", Duration.ofSeconds(1), () -> locks.isHeld("a")))
                .isTrue();
    }

    /** Holds {@code key}'s lock on another thread until {@code release} opens; returns once it is held. */
    private CompletableFuture<String> holdUntilReleased(String key, CountDownLatch release, String result)
            throws InterruptedException {
        var held = new CountDownLatch(1);
        CompletableFuture<String> holder =
                CompletableFuture.supplyAsync(() -> locks.call(key, Duration.ofSeconds(5), () -> {
                    held.countDown();
                    await(release);
                    return result;
                }));
        assertThat(held.await(5, TimeUnit.SECONDS)).isTrue();
        return holder;
    }

    private static void await(CountDownLatch latch) {
        try {
            assertThat(latch.await(5, TimeUnit.SECONDS)).isTrue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
