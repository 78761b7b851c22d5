package dev.sandgate.driver.host;

import dev.sandgate.driver.remote.DriverWire;
import dev.sandgate.driver.v1.MutationAnnouncement;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxRef;
import io.grpc.Context;
import io.grpc.Deadline;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The server's side of one mutating call's hook (see "THE MUTATION HOOK" in driver.proto): {@link #announce} sends
 * an announcement and blocks the driver's thread until the client acknowledges it. If the call is cancelled or its
 * deadline passes first, the driver's hook call fails with ABORTED, so the driver mutates nothing.
 */
final class MutationAnnouncer {
    private final boolean enabled;
    private final Consumer<MutationAnnouncement> send;
    private final AtomicLong sequences = new AtomicLong();
    private final ConcurrentHashMap<Long, CompletableFuture<Void>> pending = new ConcurrentHashMap<>();
    private volatile boolean cancelled;

    MutationAnnouncer(boolean enabled, Consumer<MutationAnnouncement> send) {
        this.enabled = enabled;
        this.send = send;
    }

    void announce(SandboxRef ref, MutationHook.Operation operation, String backendId) {
        if (!enabled) {
            return;
        }
        long sequence = sequences.incrementAndGet();
        var acknowledged = new CompletableFuture<Void>();
        pending.put(sequence, acknowledged);
        if (cancelled) {
            acknowledged.cancel(false);
        }
        send.accept(MutationAnnouncement.newBuilder()
                .setSequence(sequence)
                .setRef(DriverWire.toProto(ref))
                .setOperation(DriverWire.toProto(operation))
                .setBackendId(backendId)
                .build());
        Deadline deadline = Context.current().getDeadline();
        try {
            if (deadline == null) {
                acknowledged.get();
            } else {
                acknowledged.get(Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)), TimeUnit.NANOSECONDS);
            }
        } catch (CancellationException | ExecutionException e) {
            throw new DriverException(
                    DriverErrorCode.ABORTED, "the client cancelled the call before acknowledging the mutation");
        } catch (TimeoutException e) {
            throw new DriverException(
                    DriverErrorCode.DEADLINE_EXCEEDED,
                    "the call's deadline passed before the mutation was acknowledged");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DriverException(DriverErrorCode.ABORTED, "interrupted before the mutation was acknowledged");
        } finally {
            pending.remove(sequence);
        }
    }

    void acknowledged(long sequence) {
        CompletableFuture<Void> waiting = pending.get(sequence);
        if (waiting != null) {
            waiting.complete(null);
        }
    }

    void cancel() {
        cancelled = true;
        pending.values().forEach(waiting -> waiting.cancel(false));
    }
}
