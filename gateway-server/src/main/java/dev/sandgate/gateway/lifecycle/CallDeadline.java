package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.error.GatewayException;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * How long one lifecycle call may take, passed down to its driver calls instead of being looked up on the thread.
 *
 * @param maxWait how long the call may wait for a busy sandbox or for a duplicate request in flight
 * @param overdue for a client that waits on the calling thread: told once, from another thread, the {@code
 *     TRANSITION_PENDING} answer it is owed when a driver call of the call overruns the driver timeout (the driver
 *     call then goes on holding the sandbox's lock, and its result is committed when it comes). Empty: driver calls
 *     are handed to driver-call threads and waited for up to the driver timeout.
 */
public record CallDeadline(Duration maxWait, Optional<Consumer<GatewayException>> overdue) {
    public CallDeadline {
        requireNonNull(maxWait, "maxWait is null");
        requireNonNull(overdue, "overdue is null");
    }

    /** A call that waits up to {@code maxWait} for a busy sandbox; its driver calls run on driver-call threads. */
    public static CallDeadline waiting(Duration maxWait) {
        return new CallDeadline(maxWait, Optional.empty());
    }

    /** This deadline, with driver calls made on the calling thread and {@code overdue} told when one overruns. */
    public CallDeadline answering(Consumer<GatewayException> overdue) {
        return new CallDeadline(maxWait, Optional.of(requireNonNull(overdue, "overdue is null")));
    }
}
