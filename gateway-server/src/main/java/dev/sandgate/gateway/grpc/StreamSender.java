package dev.sandgate.gateway.grpc;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.ArrayDeque;

/**
 * The sending side of one server stream whose messages come from a driver's thread (exec output, logs). {@link
 * #send} blocks that thread while the client is not ready for more (gRPC's flow control: at most one message is
 * buffered beyond the transport's ready threshold), which slows the producer down, and returns at once, dropping the
 * message, once the stream ended or the client cancelled. Messages sent before {@link #open} are held, so that the
 * stream's first message goes first however fast the driver is; at most {@link #MAX_HELD} of them: beyond, the
 * driver's thread waits for the open, except the thread that will open (it called {@link #opening}: a driver that
 * delivers output before its call returned), whose excess ends the stream with DRIVER_INTERNAL rather than wait for
 * itself. The gateway thus buffers a bounded amount of a stream however slowly its client reads. The stream ends
 * once: the first of {@link #complete}, {@link #fail} and a cancellation wins.
 */
final class StreamSender<T> {
    /** How many messages are held before {@link #open} at most. */
    static final int MAX_HELD = 64;

    private final ServerCallStreamObserver<T> out;
    private final Object lock = new Object();
    private final ArrayDeque<T> held = new ArrayDeque<>();
    private boolean open;
    private boolean finished;
    private boolean heldEnd;
    private Thread opener;

    /** Takes over {@code out}'s ready and cancel handlers; {@code onCancel} runs once the client cancelled. */
    StreamSender(ServerCallStreamObserver<T> out, Runnable onCancel) {
        this.out = requireNonNull(out, "out is null");
        requireNonNull(onCancel, "onCancel is null");
        out.setOnReadyHandler(this::wake);
        out.setOnCancelHandler(() -> {
            synchronized (lock) {
                finished = true;
                lock.notifyAll();
            }
            onCancel.run();
        });
    }

    /** Marks the calling thread as the one that will call {@link #open} (it calls the driver first). */
    void opening() {
        synchronized (lock) {
            opener = Thread.currentThread();
        }
    }

    /** Sends {@code first} (if not null), then what was held, and lets later messages through. */
    void open(T first) {
        synchronized (lock) {
            if (finished) {
                return;
            }
            open = true;
            lock.notifyAll();
            if (first != null) {
                out.onNext(first);
            }
            while (!held.isEmpty()) {
                out.onNext(held.poll());
            }
            if (heldEnd) {
                finish(null);
            }
        }
    }

    /** Sends {@code message} once the client is ready for it; false (and nothing sent) once the stream ended. */
    boolean send(T message) {
        synchronized (lock) {
            boolean interrupted = false;
            try {
                while (!finished && !open && held.size() >= MAX_HELD) {
                    if (Thread.currentThread() == opener) {
                        fail(new GatewayException(
                                ErrorReason.DRIVER_INTERNAL,
                                "the driver delivered more than " + MAX_HELD
                                        + " messages of output before its call returned"));
                        return false;
                    }
                    try {
                        lock.wait();
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
                if (finished) {
                    return false;
                }
                if (!open) {
                    held.add(message);
                    return true;
                }
                while (!out.isReady() && !finished) {
                    try {
                        lock.wait();
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
                if (finished) {
                    return false;
                }
                out.onNext(message);
                return true;
            } finally {
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /** Ends the stream with OK (after what was sent or held). */
    void complete() {
        synchronized (lock) {
            if (!finished && !open) {
                heldEnd = true;
                return;
            }
            finish(null);
        }
    }

    /** Ends the stream with {@code failure}'s status; true if this ended it. */
    boolean fail(Throwable failure) {
        synchronized (lock) {
            if (!finished && !open) {
                // Nothing went out yet: the failure replaces what was held.
                held.clear();
                open = true;
            }
            return finish(failure);
        }
    }

    /** Whether the stream ended (answered or cancelled). */
    boolean finished() {
        synchronized (lock) {
            return finished;
        }
    }

    private boolean finish(Throwable failure) {
        if (finished) {
            return false;
        }
        finished = true;
        lock.notifyAll();
        if (failure == null) {
            out.onCompleted();
        } else {
            out.onError(ErrorMapper.toStatusException(failure));
        }
        return true;
    }

    private void wake() {
        synchronized (lock) {
            lock.notifyAll();
        }
    }
}
