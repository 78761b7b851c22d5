package dev.sandgate.gateway.testing;

import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.WatchEventType;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/** A WatchSandboxes stream as a test reads it: one event at a time, each within a deadline. */
public final class WatchClient implements AutoCloseable {
    private final BlockingQueue<Object> received = new LinkedBlockingQueue<>();
    private volatile ClientCallStreamObserver<WatchSandboxesRequest> call;

    public WatchClient(SandboxServiceGrpc.SandboxServiceStub stub, WatchSandboxesRequest request) {
        stub.watchSandboxes(request, new ClientResponseObserver<WatchSandboxesRequest, WatchSandboxesResponse>() {
            @Override
            public void beforeStart(ClientCallStreamObserver<WatchSandboxesRequest> requestStream) {
                call = requestStream;
            }

            @Override
            public void onNext(WatchSandboxesResponse value) {
                received.add(value);
            }

            @Override
            public void onError(Throwable t) {
                received.add(t);
            }

            @Override
            public void onCompleted() {
                received.add("completed");
            }
        });
    }

    /** The next event; fails if none arrives within 30 s or the stream ended. */
    public WatchSandboxesResponse next() throws InterruptedException {
        Object item = received.poll(30, TimeUnit.SECONDS);
        if (item instanceof WatchSandboxesResponse response) {
            return response;
        }
        throw new AssertionError("expected a watch event, got " + item);
    }

    /** Reads events until one matches, returning it; fails after 30 s. */
    public WatchSandboxesResponse nextMatching(Predicate<WatchSandboxesResponse> wanted) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            Object item = received.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (item instanceof WatchSandboxesResponse response && wanted.test(response)) {
                return response;
            }
            if (item != null && !(item instanceof WatchSandboxesResponse)) {
                throw new AssertionError("the watch ended: " + item);
            }
        }
        throw new AssertionError("no matching watch event within 30 s");
    }

    /** How the stream ended: skips events, fails if it has not ended within 30 s. */
    public Object end() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            Object item = received.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (item != null && !(item instanceof WatchSandboxesResponse)) {
                return item;
            }
        }
        throw new AssertionError("the watch did not end within 30 s");
    }

    /** Reads the snapshot up to and including SYNCED and returns the snapshot events. */
    public java.util.List<WatchSandboxesResponse> snapshot() throws InterruptedException {
        java.util.List<WatchSandboxesResponse> events = new java.util.ArrayList<>();
        while (true) {
            WatchSandboxesResponse event = next();
            if (event.getType() == WatchEventType.SYNCED) {
                return events;
            }
            events.add(event);
        }
    }

    @Override
    public void close() {
        if (call != null) {
            call.cancel("test done", null);
        }
    }
}
