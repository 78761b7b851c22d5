package dev.sandgate.driver.remote;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.v1.CallContext;
import dev.sandgate.driver.v1.CloseRequest;
import dev.sandgate.driver.v1.ComputeDriverGrpc;
import dev.sandgate.driver.v1.CreateCall;
import dev.sandgate.driver.v1.CreateReply;
import dev.sandgate.driver.v1.CreateRequest;
import dev.sandgate.driver.v1.DeleteCall;
import dev.sandgate.driver.v1.DeleteReply;
import dev.sandgate.driver.v1.DeleteRequest;
import dev.sandgate.driver.v1.GetRequest;
import dev.sandgate.driver.v1.ListRequest;
import dev.sandgate.driver.v1.MutationAcknowledgement;
import dev.sandgate.driver.v1.MutationAnnouncement;
import dev.sandgate.driver.v1.StartCall;
import dev.sandgate.driver.v1.StartReply;
import dev.sandgate.driver.v1.StartRequest;
import dev.sandgate.driver.v1.StopCall;
import dev.sandgate.driver.v1.StopReply;
import dev.sandgate.driver.v1.StopRequest;
import dev.sandgate.driver.v1.ValidateRequest;
import dev.sandgate.driver.v1.WatchEvent;
import dev.sandgate.driver.v1.WatchRequest;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.StartResult;
import dev.sandgate.spi.StopResult;
import dev.sandgate.spi.WatchSubscription;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.LongFunction;
import java.util.function.Supplier;

/**
 * The SPI over {@code sandgate.driver.v1}: each method is one call to the remote driver, with the per-call deadline of
 * {@link RemoteSettings#callTimeout()} (a shorter deadline of the caller's gRPC context wins). The mutation hook runs
 * here, on the calling thread, between the server's announcement and this side's acknowledgement. A call that fails
 * without the driver's own answer (the process died, the connection broke) is UNAVAILABLE, and the channel
 * reconnects at the next call.
 */
final class RemoteDriver implements ComputeDriver {
    /** How much later than the call timeout a mutating call's wire deadline is (see {@link #async()}). */
    private static final Duration WIRE_DEADLINE_GRACE = Duration.ofSeconds(1);

    private final RemoteSettings settings;
    private final ManagedChannel channel;
    private final DriverContext context;
    private final CallContext callContext;
    private final DriverCapabilities capabilities;
    private final AtomicBoolean closed = new AtomicBoolean();

    RemoteDriver(
            RemoteSettings settings, ManagedChannel channel, DriverContext context, DriverCapabilities capabilities) {
        this.settings = requireNonNull(settings, "settings is null");
        this.channel = requireNonNull(channel, "channel is null");
        this.context = requireNonNull(context, "context is null");
        this.capabilities = requireNonNull(capabilities, "capabilities is null");
        this.callContext = CallContext.newBuilder()
                .setGatewayId(context.gatewayId())
                .setInstanceId(UUID.randomUUID().toString())
                .setAnnounceMutations(!MutationHook.NONE.equals(context.mutationHook()))
                .build();
    }

    @Override
    public DriverCapabilities capabilities() {
        return capabilities;
    }

    @Override
    public void validate(SandboxSpec spec, LaunchInput launch) {
        unary(
                "validate",
                () -> blocking()
                        .validate(ValidateRequest.newBuilder()
                                .setContext(callContext)
                                .setSpec(DriverWire.toProto(spec))
                                .setLaunch(DriverWire.toProto(launch))
                                .build()));
    }

    @Override
    public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
        var request = CreateRequest.newBuilder()
                .setContext(callContext)
                .setRef(DriverWire.toProto(ref))
                .setSpec(DriverWire.toProto(spec))
                .setLaunch(DriverWire.toProto(launch))
                .build();
        return this.<CreateCall, CreateReply, CreateResult>mutation(
                "create",
                observer -> async().create(observer),
                CreateCall.newBuilder().setRequest(request).build(),
                sequence -> CreateCall.newBuilder()
                        .setAcknowledgement(ack(sequence))
                        .build(),
                reply -> reply.hasAnnouncement() ? reply.getAnnouncement() : null,
                reply -> new CreateResult(
                        DriverWire.observation(reply.getResponse().getObservation()),
                        reply.getResponse().getCreated()));
    }

    @Override
    public SandboxObservation get(SandboxRef ref) {
        return DriverWire.observation(unary(
                        "get",
                        () -> blocking()
                                .get(GetRequest.newBuilder()
                                        .setContext(callContext)
                                        .setRef(DriverWire.toProto(ref))
                                        .build()))
                .getObservation());
    }

    @Override
    public List<SandboxObservation> list() {
        return unary(
                        "list",
                        () -> blocking()
                                .list(ListRequest.newBuilder()
                                        .setContext(callContext)
                                        .build()))
                .getObservationsList()
                .stream()
                .map(DriverWire::observation)
                .toList();
    }

    @Override
    public StartResult start(SandboxRef ref, LaunchInput launch) {
        var request = StartRequest.newBuilder()
                .setContext(callContext)
                .setRef(DriverWire.toProto(ref))
                .setLaunch(DriverWire.toProto(launch))
                .build();
        return this.<StartCall, StartReply, StartResult>mutation(
                "start",
                observer -> async().start(observer),
                StartCall.newBuilder().setRequest(request).build(),
                sequence ->
                        StartCall.newBuilder().setAcknowledgement(ack(sequence)).build(),
                reply -> reply.hasAnnouncement() ? reply.getAnnouncement() : null,
                reply -> new StartResult(
                        DriverWire.observation(reply.getResponse().getObservation()),
                        reply.getResponse().getLaunched()));
    }

    @Override
    public StopResult stop(SandboxRef ref, OptionalLong expectedGeneration) {
        var request = StopRequest.newBuilder().setContext(callContext).setRef(DriverWire.toProto(ref));
        expectedGeneration.ifPresent(request::setExpectedGeneration);
        return this.<StopCall, StopReply, StopResult>mutation(
                "stop",
                observer -> async().stop(observer),
                StopCall.newBuilder().setRequest(request).build(),
                sequence ->
                        StopCall.newBuilder().setAcknowledgement(ack(sequence)).build(),
                reply -> reply.hasAnnouncement() ? reply.getAnnouncement() : null,
                reply -> new StopResult(
                        DriverWire.observation(reply.getResponse().getObservation()),
                        reply.getResponse().getStoppedNow()));
    }

    @Override
    public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
        var request = DeleteRequest.newBuilder().setContext(callContext).setRef(DriverWire.toProto(ref));
        expectedGeneration.ifPresent(request::setExpectedGeneration);
        return this.<DeleteCall, DeleteReply, DeleteResult>mutation(
                "delete",
                observer -> async().delete(observer),
                DeleteCall.newBuilder().setRequest(request).build(),
                sequence -> DeleteCall.newBuilder()
                        .setAcknowledgement(ack(sequence))
                        .build(),
                reply -> reply.hasAnnouncement() ? reply.getAnnouncement() : null,
                reply -> new DeleteResult(reply.getResponse().getDeleted()));
    }

    @Override
    public WatchSubscription watch(SandboxWatcher watcher) {
        requireNonNull(watcher, "watcher is null");
        var subscription = new RemoteWatch(watcher);
        ComputeDriverGrpc.newStub(channel)
                .watch(WatchRequest.newBuilder().setContext(callContext).build(), subscription);
        subscription.awaitSubscribed(settings.connectTimeout().toMillis());
        return subscription;
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            ComputeDriverGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(settings.connectTimeout().toMillis(), TimeUnit.MILLISECONDS)
                    .close(CloseRequest.newBuilder().setContext(callContext).build());
        } catch (StatusRuntimeException e) {
            // the remote instance goes with its process; nothing of the sandboxes depends on this call
        } finally {
            channel.shutdownNow();
        }
    }

    private ComputeDriverGrpc.ComputeDriverBlockingStub blocking() {
        return ComputeDriverGrpc.newBlockingStub(channel)
                .withDeadlineAfter(settings.callTimeout().toMillis(), TimeUnit.MILLISECONDS);
    }

    /**
     * The stub of a mutating call. Its wire deadline is a little later than the call timeout, so that the caller's own
     * wait ends first and says which operation got no answer in how long.
     */
    private ComputeDriverGrpc.ComputeDriverStub async() {
        return ComputeDriverGrpc.newStub(channel)
                .withDeadlineAfter(
                        settings.callTimeout().plus(WIRE_DEADLINE_GRACE).toMillis(), TimeUnit.MILLISECONDS);
    }

    private static MutationAcknowledgement ack(long sequence) {
        return MutationAcknowledgement.newBuilder().setSequence(sequence).build();
    }

    private <T> T unary(String what, Supplier<T> call) {
        requireOpen();
        try {
            return call.get();
        } catch (StatusRuntimeException e) {
            throw failure(e, what);
        }
    }

    private DriverException failure(Throwable e, String what) {
        DriverException error = DriverErrors.fromThrowable(e, "remote driver at " + settings.target() + ", " + what);
        if (Status.fromThrowable(e).getCode() == Status.Code.UNAVAILABLE) {
            channel.resetConnectBackoff();
        }
        return error;
    }

    private void requireOpen() {
        if (closed.get()) {
            throw new DriverException(DriverErrorCode.INTERNAL, "the remote driver was closed");
        }
        // A driver process that came back is reached at once, not after the channel's reconnection back-off.
        if (channel.getState(false) == ConnectivityState.TRANSIENT_FAILURE) {
            channel.resetConnectBackoff();
        }
    }

    /**
     * One mutating call (see "THE MUTATION HOOK" in driver.proto): sends the request, runs the hook for each
     * announcement on this thread and acknowledges it, returns the response. If the hook throws, the call is
     * cancelled (the driver's hook call fails, the driver mutates nothing) and the hook's exception is rethrown. The
     * whole call, hooks included, has the call timeout: a driver that never answers is DEADLINE_EXCEEDED naming the
     * operation and the timeout, and the call is cancelled, never an endless wait.
     */
    private <C, R, T> T mutation(
            String what,
            Function<StreamObserver<R>, StreamObserver<C>> open,
            C request,
            LongFunction<C> acknowledgement,
            Function<R, MutationAnnouncement> announcementOf,
            Function<R, T> resultOf) {
        requireOpen();
        long deadline = System.nanoTime() + settings.callTimeout().toNanos();
        var replies = new LinkedBlockingQueue<Object>();
        var observer = new ClientResponseObserver<C, R>() {
            @Override
            public void beforeStart(ClientCallStreamObserver<C> requestStream) {}

            @Override
            public void onNext(R reply) {
                replies.add(reply);
            }

            @Override
            public void onError(Throwable failure) {
                replies.add(new Failed(failure));
            }

            @Override
            public void onCompleted() {
                replies.add(Completed.INSTANCE);
            }
        };
        StreamObserver<C> requests = open.apply(observer);
        requests.onNext(request);
        try {
            while (true) {
                Object next = replies.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                if (next == null) {
                    requests.onError(Status.CANCELLED
                            .withDescription(what + " got no answer within the call timeout")
                            .asRuntimeException());
                    throw new DriverException(
                            DriverErrorCode.DEADLINE_EXCEEDED,
                            "remote driver at " + settings.target() + ": " + what + " got no answer within "
                                    + settings.callTimeout() + " (" + RemoteSettings.CALL_TIMEOUT + ")");
                }
                if (next instanceof Failed failed) {
                    throw failure(failed.failure(), what);
                }
                if (next == Completed.INSTANCE) {
                    throw new DriverException(
                            DriverErrorCode.INTERNAL,
                            "remote driver at " + settings.target() + ": " + what + " ended without an answer");
                }
                @SuppressWarnings("unchecked")
                R reply = (R) next;
                MutationAnnouncement announcement = announcementOf.apply(reply);
                if (announcement == null) {
                    T result = resultOf.apply(reply);
                    requests.onCompleted();
                    return result;
                }
                try {
                    context.mutationHook()
                            .beforeMutation(
                                    DriverWire.ref(announcement.getRef()),
                                    DriverWire.operation(announcement.getOperation()),
                                    announcement.getBackendId());
                } catch (RuntimeException | Error e) {
                    requests.onError(Status.CANCELLED
                            .withDescription("the mutation hook failed")
                            .asRuntimeException());
                    throw e;
                }
                requests.onNext(acknowledgement.apply(announcement.getSequence()));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            requests.onError(Status.CANCELLED.withDescription("interrupted").asRuntimeException());
            throw new DriverException(DriverErrorCode.UNAVAILABLE, what + " interrupted", e);
        }
    }

    private record Failed(Throwable failure) {}

    private enum Completed {
        INSTANCE
    }

    /** A watch over the wire: delivers events one at a time and never after {@link #close()} or an error. */
    private final class RemoteWatch implements ClientResponseObserver<WatchRequest, WatchEvent>, WatchSubscription {
        private final SandboxWatcher watcher;
        private final CountDownLatch subscribed = new CountDownLatch(1);
        private final AtomicReference<Throwable> failedEarly = new AtomicReference<>();
        private ClientCallStreamObserver<WatchRequest> call;
        private boolean ended;

        RemoteWatch(SandboxWatcher watcher) {
            this.watcher = watcher;
        }

        @Override
        public void beforeStart(ClientCallStreamObserver<WatchRequest> requestStream) {
            this.call = requestStream;
        }

        void awaitSubscribed(long timeoutMillis) {
            try {
                if (!subscribed.await(timeoutMillis, TimeUnit.MILLISECONDS)) {
                    close();
                    throw new DriverException(
                            DriverErrorCode.DEADLINE_EXCEEDED,
                            "remote driver at " + settings.target() + ": watch not established within " + timeoutMillis
                                    + " ms");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                close();
                throw new DriverException(DriverErrorCode.UNAVAILABLE, "watch interrupted", e);
            }
            Throwable failure = failedEarly.get();
            if (failure != null) {
                throw failure(failure, "watch");
            }
        }

        @Override
        public synchronized void onNext(WatchEvent event) {
            if (event.hasSubscribed()) {
                subscribed.countDown();
                return;
            }
            if (ended) {
                return;
            }
            try {
                watcher.onEvent(DriverWire.event(event));
            } catch (DriverException e) {
                end(e);
            }
        }

        @Override
        public synchronized void onError(Throwable failure) {
            if (subscribed.getCount() > 0) {
                failedEarly.set(failure);
                ended = true;
                subscribed.countDown();
                return;
            }
            if (!ended) {
                ended = true;
                watcher.onError(failure(failure, "watch"));
            }
        }

        @Override
        public synchronized void onCompleted() {
            onError(Status.UNAVAILABLE
                    .withDescription("the remote driver ended the watch")
                    .asRuntimeException());
        }

        private void end(DriverException error) {
            ended = true;
            call.cancel("the event could not be read", error);
            watcher.onError(error);
        }

        @Override
        public void close() {
            synchronized (this) {
                if (ended) {
                    return;
                }
                ended = true;
            }
            call.cancel("closed by the client", null);
        }
    }
}
