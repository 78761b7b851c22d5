package dev.sandgate.conformance;

import static org.assertj.core.api.Assertions.fail;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The kit's one poll loop. It backs off from 5 ms to 250 ms so that a fast backend is not slowed by the kit and a slow
 * one is not flooded with calls; it lives in the kit rather than in a polling library so that the kit adds no
 * dependency to its users' tests.
 */
final class KitPolling {
    private static final long FIRST_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
    private static final long MAX_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

    private KitPolling() {}

    /**
     * Calls {@code attempt} until it answers a value and returns that value; fails with {@code timedOut}'s message
     * once {@code timeout} has passed without one. An exception of {@code attempt} ends the wait.
     */
    static <T> T until(Duration timeout, Supplier<Optional<T>> attempt, Supplier<String> timedOut) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long pause = FIRST_PAUSE_NANOS;
        while (true) {
            Optional<T> answer = attempt.get();
            if (answer.isPresent()) {
                return answer.get();
            }
            if (System.nanoTime() - deadline > 0) {
                return fail(timedOut.get());
            }
            try {
                TimeUnit.NANOSECONDS.sleep(pause);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while polling", e);
            }
            pause = Math.min(pause * 2, MAX_PAUSE_NANOS);
        }
    }
}
