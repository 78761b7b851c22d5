package dev.sandgate.gateway.grpc;

import static java.util.Objects.requireNonNull;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxResponse;
import dev.sandgate.api.v1.ExecSandboxRequest;
import dev.sandgate.api.v1.ExecSandboxResponse;
import dev.sandgate.api.v1.GetOperationRequest;
import dev.sandgate.api.v1.GetSandboxPolicyRequest;
import dev.sandgate.api.v1.GetSandboxPolicyResponse;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.GetSandboxResponse;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.ListSandboxesResponse;
import dev.sandgate.api.v1.Operation;
import dev.sandgate.api.v1.RenewSandboxLeaseRequest;
import dev.sandgate.api.v1.RenewSandboxLeaseResponse;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StartSandboxResponse;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.StopSandboxResponse;
import dev.sandgate.api.v1.StreamSandboxLogsRequest;
import dev.sandgate.api.v1.StreamSandboxLogsResponse;
import dev.sandgate.api.v1.UpdateSandboxPolicyRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyResponse;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.lifecycle.CallDeadline;
import dev.sandgate.gateway.lifecycle.Lifecycle;
import dev.sandgate.gateway.security.Principal;
import dev.sandgate.gateway.store.SandboxFilter;
import io.grpc.BindableService;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.ServerServiceDefinition;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The {@code sandgate.v1.SandboxService}: translates with {@link ApiMapper}, delegates to {@link Lifecycle}, and maps
 * every failure with {@link ErrorMapper}. Nothing else happens here.
 */
public final class SandboxServiceImpl implements SandboxServiceGrpc.AsyncService, BindableService, AutoCloseable {
    private final Lifecycle lifecycle;
    private final ApiMapper mapper;
    private final Duration defaultWait;
    private final Executor callExecutor;
    private final WatchFanout fanout;

    /**
     * @param callExecutor runs each unary call's work (which blocks: on the store, on the driver, on a busy sandbox),
     *     so that gRPC may call this service on its transport's threads (a server built with {@code directExecutor()})
     *     and each call passes between threads once, not once per gRPC callback
     * @param watchExecutor runs the watch streams' turns (a small pool: no stream has a thread of its own)
     */
    public SandboxServiceImpl(
            Lifecycle lifecycle, Duration defaultWait, Executor callExecutor, Executor watchExecutor) {
        this.lifecycle = requireNonNull(lifecycle, "lifecycle is null");
        this.mapper = new ApiMapper(lifecycle.tokens(), lifecycle.driverName());
        this.defaultWait = requireNonNull(defaultWait, "defaultWait is null");
        this.callExecutor = requireNonNull(callExecutor, "callExecutor is null");
        this.fanout = new WatchFanout(
                lifecycle.hub(), mapper::watchEvent, requireNonNull(watchExecutor, "watchExecutor is null"));
    }

    /**
     * This service as a server binds it: WatchSandboxes sends each change's event serialized once for all streams
     * ({@link WatchWire}); every other method is the generated one.
     */
    @Override
    public ServerServiceDefinition bindService() {
        return WatchWire.bind(SandboxServiceGrpc.bindService(this), this::watch);
    }

    /** Stops the watch fan-out (after {@link #endWatches()} and the server's termination). */
    @Override
    public void close() {
        fanout.close();
    }

    @Override
    public void createSandbox(CreateSandboxRequest request, StreamObserver<CreateSandboxResponse> out) {
        mutate(out, deadline -> mapper.createResponse(lifecycle.create(mapper.create(request), deadline)));
    }

    @Override
    public void getSandbox(GetSandboxRequest request, StreamObserver<GetSandboxResponse> out) {
        respond(
                out,
                () -> GetSandboxResponse.newBuilder()
                        .setSandbox(mapper.sandbox(
                                lifecycle.get(RequestFields.target(request.hasTarget() ? request.getTarget() : null))))
                        .build());
    }

    @Override
    public void listSandboxes(ListSandboxesRequest request, StreamObserver<ListSandboxesResponse> out) {
        respond(out, () -> {
            SandboxFilter filter = mapper.filter(request);
            int size = mapper.pageSize(request);
            Lifecycle.Page page = lifecycle.list(filter, mapper.pageToken(request, filter), size);
            ListSandboxesResponse.Builder response = ListSandboxesResponse.newBuilder();
            page.sandboxes().forEach(s -> response.addSandboxes(mapper.sandbox(s)));
            if (page.more()) {
                response.setNextPageToken(
                        mapper.nextPageToken(filter, page.sandboxes().getLast()));
            }
            return response.build();
        });
    }

    @Override
    public void stopSandbox(StopSandboxRequest request, StreamObserver<StopSandboxResponse> out) {
        mutate(out, deadline -> mapper.stopResponse(lifecycle.stop(mapper.stop(request), deadline)));
    }

    @Override
    public void startSandbox(StartSandboxRequest request, StreamObserver<StartSandboxResponse> out) {
        mutate(out, deadline -> mapper.startResponse(lifecycle.start(mapper.start(request), deadline)));
    }

    @Override
    public void deleteSandbox(DeleteSandboxRequest request, StreamObserver<DeleteSandboxResponse> out) {
        mutate(out, deadline -> mapper.deleteResponse(lifecycle.delete(mapper.delete(request), deadline)));
    }

    private void watch(WatchSandboxesRequest request, ServerCallStreamObserver<Object> out) {
        SandboxFilter filter;
        try {
            filter = mapper.filter(request);
        } catch (RuntimeException e) {
            out.onError(ErrorMapper.toStatusException(e));
            return;
        }
        try {
            WatchStream.start(lifecycle, mapper, filter, VisibleWorkspaces.KEY.get(), out, fanout);
        } catch (RejectedExecutionException e) {
            out.onError(ErrorMapper.toStatusException(
                    new GatewayException(ErrorReason.GATEWAY_SHUTTING_DOWN, "the gateway is shutting down")));
        }
    }

    /**
     * Ends every open watch stream with UNAVAILABLE (reason GATEWAY_SHUTTING_DOWN), for a gateway that is shutting
     * down: a watch never ends by itself. Returns how many were open; they end shortly after, each on its own thread.
     */
    public int endWatches() {
        int open = 0;
        for (WatchStream stream : fanout.streams()) {
            stream.shutDown();
            open++;
        }
        return open;
    }

    @Override
    public void updateSandboxPolicy(
            UpdateSandboxPolicyRequest request, StreamObserver<UpdateSandboxPolicyResponse> out) {
        mutate(
                out,
                deadline ->
                        mapper.updatePolicyResponse(lifecycle.updatePolicy(mapper.updatePolicy(request), deadline)));
    }

    @Override
    public void renewSandboxLease(RenewSandboxLeaseRequest request, StreamObserver<RenewSandboxLeaseResponse> out) {
        mutate(
                out,
                deadline ->
                        mapper.renewLeaseResponse(lifecycle.renewLease(ExpiryMapper.renewLease(request), deadline)));
    }

    @Override
    public void getSandboxPolicy(GetSandboxPolicyRequest request, StreamObserver<GetSandboxPolicyResponse> out) {
        respond(
                out,
                () -> mapper.policyResponse(
                        lifecycle.policy(RequestFields.target(request.hasTarget() ? request.getTarget() : null))));
    }

    @Override
    public void getOperation(GetOperationRequest request, StreamObserver<Operation> out) {
        respond(
                out,
                () -> mapper.operation(lifecycle.operation(
                        mapper.requestIdForLookup(request.getRequestId()),
                        Principal.current().ledgerName())));
    }

    @Override
    public StreamObserver<ExecSandboxRequest> execSandbox(StreamObserver<ExecSandboxResponse> out) {
        return ExecCall.open(lifecycle.execs(), out, callExecutor);
    }

    @Override
    public void streamSandboxLogs(StreamSandboxLogsRequest request, StreamObserver<StreamSandboxLogsResponse> out) {
        LogsCall.serve(lifecycle.execs(), request, out, callExecutor);
    }

    /** How long an operation may wait for a busy sandbox: the caller's deadline, or the default without one. */
    private Duration maxWait() {
        Deadline deadline = Context.current().getDeadline();
        if (deadline == null) {
            return defaultWait;
        }
        return Duration.ofNanos(Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)));
    }

    /** Answers a unary call that changes nothing with what {@code work} returns or throws. */
    private <T> void respond(StreamObserver<T> out, Supplier<T> work) {
        mutate(out, deadline -> work.get());
    }

    /**
     * Answers a unary call with what {@code work} returns or throws, unless the lifecycle answered it first because a
     * driver call overran the driver timeout (see {@link CallDeadline#overdue}).
     */
    private <T> void mutate(StreamObserver<T> out, Function<CallDeadline, T> work) {
        Answer<T> answer = new Answer<>(out);
        try {
            // The call's context (its deadline, its cancellation) goes with the work.
            callExecutor.execute(Context.current().wrap(() -> answer(answer, work)));
        } catch (RejectedExecutionException e) {
            answer.fail(new GatewayException(ErrorReason.GATEWAY_SHUTTING_DOWN, "the gateway is shutting down"));
        }
    }

    private <T> void answer(Answer<T> answer, Function<CallDeadline, T> work) {
        T value;
        try {
            value = work.apply(CallDeadline.waiting(maxWait()).answering(answer::fail));
        } catch (Throwable failure) {
            answer.fail(failure);
            return;
        }
        answer.complete(value);
    }

    /** The one answer of a unary call: the first given wins, and the observer is never called by two threads at once. */
    private static final class Answer<T> {
        private final StreamObserver<T> out;
        private boolean given;

        Answer(StreamObserver<T> out) {
            this.out = out;
        }

        synchronized void complete(T value) {
            if (!given) {
                given = true;
                out.onNext(value);
                out.onCompleted();
            }
        }

        synchronized void fail(Throwable failure) {
            if (!given) {
                given = true;
                out.onError(ErrorMapper.toStatusException(failure));
            }
        }
    }
}
