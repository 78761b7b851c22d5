package dev.sandgate.driver.host;

import static java.util.Objects.requireNonNull;

import com.google.protobuf.Any;
import com.google.rpc.ErrorInfo;
import dev.sandgate.driver.remote.DriverErrors;
import dev.sandgate.driver.remote.DriverWire;
import dev.sandgate.driver.remote.RemoteDriverProvider;
import dev.sandgate.driver.v1.CallContext;
import dev.sandgate.driver.v1.CloseRequest;
import dev.sandgate.driver.v1.CloseResponse;
import dev.sandgate.driver.v1.ComputeDriverGrpc;
import dev.sandgate.driver.v1.CreateCall;
import dev.sandgate.driver.v1.CreateReply;
import dev.sandgate.driver.v1.CreateResponse;
import dev.sandgate.driver.v1.DeleteCall;
import dev.sandgate.driver.v1.DeleteReply;
import dev.sandgate.driver.v1.DeleteResponse;
import dev.sandgate.driver.v1.GetRequest;
import dev.sandgate.driver.v1.GetResponse;
import dev.sandgate.driver.v1.HandshakeRequest;
import dev.sandgate.driver.v1.HandshakeResponse;
import dev.sandgate.driver.v1.ListRequest;
import dev.sandgate.driver.v1.ListResponse;
import dev.sandgate.driver.v1.MutationAcknowledgement;
import dev.sandgate.driver.v1.MutationAnnouncement;
import dev.sandgate.driver.v1.StartCall;
import dev.sandgate.driver.v1.StartReply;
import dev.sandgate.driver.v1.StartResponse;
import dev.sandgate.driver.v1.StopCall;
import dev.sandgate.driver.v1.StopReply;
import dev.sandgate.driver.v1.StopResponse;
import dev.sandgate.driver.v1.ValidateRequest;
import dev.sandgate.driver.v1.ValidateResponse;
import dev.sandgate.driver.v1.WatchEvent;
import dev.sandgate.driver.v1.WatchRequest;
import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxWatcher;
import dev.sandgate.spi.WatchSubscription;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.ExecutorService;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves one SPI driver over {@code sandgate.driver.v1}: translate, delegate, answer. Errors are mapped in {@link
 * DriverErrors}; anything but a {@link DriverException} is logged here and answered INTERNAL without its message.
 */
final class DriverHostService extends ComputeDriverGrpc.ComputeDriverImplBase {
    private static final Logger LOG = LoggerFactory.getLogger(DriverHostService.class);

    private final HostedInstances instances;
    private final ExecutorService calls;
    private volatile DriverCapabilities capabilities;

    DriverHostService(HostedInstances instances, ExecutorService calls) {
        this.instances = requireNonNull(instances, "instances is null");
        this.calls = requireNonNull(calls, "calls is null");
    }

    @Override
    public void handshake(HandshakeRequest request, StreamObserver<HandshakeResponse> responses) {
        if (request.getProtocolVersion() != RemoteDriverProvider.PROTOCOL_VERSION) {
            responses.onError(StatusProto.toStatusRuntimeException(com.google.rpc.Status.newBuilder()
                    .setCode(Status.Code.FAILED_PRECONDITION.value())
                    .setMessage("this driver host speaks sandgate.driver.v1 protocol version "
                            + RemoteDriverProvider.PROTOCOL_VERSION.getNumber() + ", the client "
                            + request.getProtocolVersionValue())
                    .addDetails(Any.pack(ErrorInfo.newBuilder()
                            .setDomain(DriverErrors.DOMAIN)
                            .setReason(DriverErrors.PROTOCOL_MISMATCH)
                            .build()))
                    .build()));
            return;
        }
        unary(responses, () -> {
            var answer = HandshakeResponse.newBuilder()
                    .setProtocolVersion(RemoteDriverProvider.PROTOCOL_VERSION)
                    .setDriverName(instances.provider().name())
                    .addFeatures(RemoteDriverProvider.FEATURE_MUTATION_ANNOUNCEMENTS)
                    .addFeatures(RemoteDriverProvider.FEATURE_WATCH);
            Availability availability = instances.availability();
            answer.setAvailable(availability.available()).setAvailabilityReason(availability.reason());
            if (availability.available()) {
                answer.setCapabilities(DriverWire.toProto(capabilities(request.getGatewayId())));
            }
            return answer.build();
        });
    }

    /** Constant for the driver's lifetime: read once, from a short-lived instance. */
    private DriverCapabilities capabilities(String gatewayId) {
        DriverCapabilities known = capabilities;
        if (known == null) {
            try (ComputeDriver instance = instances.create(gatewayId)) {
                known = instance.capabilities();
            }
            capabilities = known;
        }
        return known;
    }

    @Override
    public void validate(ValidateRequest request, StreamObserver<ValidateResponse> responses) {
        unary(responses, () -> {
            instances
                    .instance(request.getContext())
                    .validate(DriverWire.spec(request.getSpec()), DriverWire.launchInput(request.getLaunch()));
            return ValidateResponse.getDefaultInstance();
        });
    }

    @Override
    public void get(GetRequest request, StreamObserver<GetResponse> responses) {
        unary(
                responses,
                () -> GetResponse.newBuilder()
                        .setObservation(DriverWire.toProto(
                                instances.instance(request.getContext()).get(DriverWire.ref(request.getRef()))))
                        .build());
    }

    @Override
    public void list(ListRequest request, StreamObserver<ListResponse> responses) {
        unary(
                responses,
                () -> ListResponse.newBuilder()
                        .addAllObservations(instances.instance(request.getContext()).list().stream()
                                .map(DriverWire::toProto)
                                .toList())
                        .build());
    }

    @Override
    public void close(CloseRequest request, StreamObserver<CloseResponse> responses) {
        unary(responses, () -> {
            instances.close(request.getContext());
            return CloseResponse.getDefaultInstance();
        });
    }

    @Override
    public StreamObserver<CreateCall> create(StreamObserver<CreateReply> responses) {
        return mutation(
                responses,
                call -> call.hasRequest() ? call.getRequest().getContext() : null,
                call -> call.hasAcknowledgement() ? call.getAcknowledgement() : null,
                announcement ->
                        CreateReply.newBuilder().setAnnouncement(announcement).build(),
                (call, driver) -> {
                    var request = call.getRequest();
                    var result = driver.create(
                            DriverWire.ref(request.getRef()),
                            DriverWire.spec(request.getSpec()),
                            DriverWire.launchInput(request.getLaunch()));
                    return CreateReply.newBuilder()
                            .setResponse(CreateResponse.newBuilder()
                                    .setObservation(DriverWire.toProto(result.observation()))
                                    .setCreated(result.created()))
                            .build();
                });
    }

    @Override
    public StreamObserver<StartCall> start(StreamObserver<StartReply> responses) {
        return mutation(
                responses,
                call -> call.hasRequest() ? call.getRequest().getContext() : null,
                call -> call.hasAcknowledgement() ? call.getAcknowledgement() : null,
                announcement ->
                        StartReply.newBuilder().setAnnouncement(announcement).build(),
                (call, driver) -> {
                    var request = call.getRequest();
                    var result =
                            driver.start(DriverWire.ref(request.getRef()), DriverWire.launchInput(request.getLaunch()));
                    return StartReply.newBuilder()
                            .setResponse(StartResponse.newBuilder()
                                    .setObservation(DriverWire.toProto(result.observation()))
                                    .setLaunched(result.launched()))
                            .build();
                });
    }

    @Override
    public StreamObserver<StopCall> stop(StreamObserver<StopReply> responses) {
        return mutation(
                responses,
                call -> call.hasRequest() ? call.getRequest().getContext() : null,
                call -> call.hasAcknowledgement() ? call.getAcknowledgement() : null,
                announcement ->
                        StopReply.newBuilder().setAnnouncement(announcement).build(),
                (call, driver) -> {
                    var request = call.getRequest();
                    var result = driver.stop(
                            DriverWire.ref(request.getRef()),
                            request.getExpectedGeneration() > 0
                                    ? OptionalLong.of(request.getExpectedGeneration())
                                    : OptionalLong.empty());
                    return StopReply.newBuilder()
                            .setResponse(StopResponse.newBuilder()
                                    .setObservation(DriverWire.toProto(result.observation()))
                                    .setStoppedNow(result.stoppedNow()))
                            .build();
                });
    }

    @Override
    public StreamObserver<DeleteCall> delete(StreamObserver<DeleteReply> responses) {
        return mutation(
                responses,
                call -> call.hasRequest() ? call.getRequest().getContext() : null,
                call -> call.hasAcknowledgement() ? call.getAcknowledgement() : null,
                announcement ->
                        DeleteReply.newBuilder().setAnnouncement(announcement).build(),
                (call, driver) -> {
                    var request = call.getRequest();
                    var result = driver.delete(
                            DriverWire.ref(request.getRef()),
                            request.getExpectedGeneration() > 0
                                    ? OptionalLong.of(request.getExpectedGeneration())
                                    : OptionalLong.empty());
                    return DeleteReply.newBuilder()
                            .setResponse(DeleteResponse.newBuilder().setDeleted(result.deleted()))
                            .build();
                });
    }

    @Override
    public void watch(WatchRequest request, StreamObserver<WatchEvent> responses) {
        var stream = (ServerCallStreamObserver<WatchEvent>) responses;
        var forwarder = new WatchForwarder(stream);
        WatchSubscription subscription;
        try {
            subscription = instances.instance(request.getContext()).watch(forwarder);
        } catch (RuntimeException e) {
            responses.onError(statusOf(e));
            return;
        }
        stream.setOnCancelHandler(subscription::close);
        forwarder.established();
        if (stream.isCancelled()) {
            subscription.close();
        }
    }

    /** Holds back events delivered before the driver's watch returned, so that {@code subscribed} comes first. */
    private static final class WatchForwarder implements SandboxWatcher {
        private final ServerCallStreamObserver<WatchEvent> stream;
        private final List<WatchEvent> early = new ArrayList<>();
        private boolean established;
        private boolean ended;
        private DriverException earlyError;

        WatchForwarder(ServerCallStreamObserver<WatchEvent> stream) {
            this.stream = stream;
        }

        synchronized void established() {
            established = true;
            stream.onNext(WatchEvent.newBuilder()
                    .setSubscribed(WatchEvent.Subscribed.getDefaultInstance())
                    .build());
            early.forEach(stream::onNext);
            early.clear();
            if (earlyError != null) {
                ended = true;
                stream.onError(DriverErrors.toStatus(earlyError));
            }
        }

        @Override
        public synchronized void onEvent(SandboxEvent event) {
            if (ended || stream.isCancelled()) {
                return;
            }
            WatchEvent message = DriverWire.toProto(event);
            if (established) {
                stream.onNext(message);
            } else {
                early.add(message);
            }
        }

        @Override
        public synchronized void onError(DriverException error) {
            if (ended || stream.isCancelled()) {
                return;
            }
            if (!established) {
                earlyError = error;
                return;
            }
            ended = true;
            stream.onError(DriverErrors.toStatus(error));
        }
    }

    private interface Call<T> {
        T run();
    }

    private static <T> void unary(StreamObserver<T> responses, Call<T> call) {
        T result;
        try {
            result = call.run();
        } catch (RuntimeException e) {
            responses.onError(statusOf(e));
            return;
        }
        responses.onNext(result);
        responses.onCompleted();
    }

    /**
     * A mutating call: the first message's request runs on a thread of its own (the stream's own thread must stay
     * free to receive acknowledgements), with an announcer as the driver's hook.
     */
    private <C, R> StreamObserver<C> mutation(
            StreamObserver<R> responses,
            Function<C, CallContext> contextOf,
            Function<C, MutationAcknowledgement> acknowledgementOf,
            Function<MutationAnnouncement, R> announcementReply,
            BiFunction<C, ComputeDriver, R> work) {
        var stream = (ServerCallStreamObserver<R>) responses;
        var started = new java.util.concurrent.atomic.AtomicReference<MutationAnnouncer>();
        // With a handler set, sending on a cancelled call is a no-op instead of an exception.
        stream.setOnCancelHandler(() -> {
            MutationAnnouncer announcer = started.get();
            if (announcer != null) {
                announcer.cancel();
            }
        });
        return new StreamObserver<>() {
            private MutationAnnouncer announcer;

            @Override
            public void onNext(C message) {
                MutationAcknowledgement acknowledgement = acknowledgementOf.apply(message);
                if (acknowledgement != null) {
                    if (announcer != null) {
                        announcer.acknowledged(acknowledgement.getSequence());
                    }
                    return;
                }
                CallContext context = contextOf.apply(message);
                if (context == null || announcer != null) {
                    stream.onError(Status.INVALID_ARGUMENT
                            .withDescription("a call's first message, and only it, is the request")
                            .asRuntimeException());
                    return;
                }
                var current = new MutationAnnouncer(context.getAnnounceMutations(), announcement -> {
                    synchronized (stream) {
                        stream.onNext(announcementReply.apply(announcement));
                    }
                });
                announcer = current;
                started.set(current);
                Runnable run = () -> {
                    R reply;
                    try {
                        reply = HostedInstances.withAnnouncer(
                                current, () -> work.apply(message, instances.instance(context)));
                    } catch (RuntimeException e) {
                        synchronized (stream) {
                            stream.onError(statusOf(e));
                        }
                        return;
                    }
                    synchronized (stream) {
                        stream.onNext(reply);
                        stream.onCompleted();
                    }
                };
                calls.execute(Context.current().wrap(run));
            }

            @Override
            public void onError(Throwable failure) {
                if (announcer != null) {
                    announcer.cancel();
                }
            }

            @Override
            public void onCompleted() {}
        };
    }

    private static StatusRuntimeException statusOf(RuntimeException e) {
        if (e instanceof DriverException driverException) {
            return DriverErrors.toStatus(driverException);
        }
        if (e instanceof StatusRuntimeException status) {
            return status;
        }
        LOG.error("the hosted driver failed unexpectedly", e);
        return DriverErrors.toStatus(new DriverException(
                dev.sandgate.spi.DriverErrorCode.INTERNAL,
                "the hosted driver failed unexpectedly (" + e.getClass().getName() + "); see the driver host's log"));
    }
}
