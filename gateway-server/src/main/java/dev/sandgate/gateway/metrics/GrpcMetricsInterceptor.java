package dev.sandgate.gateway.metrics;

import static java.util.Objects.requireNonNull;

import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Reports every gRPC call's method, status code and duration (from its start to its close) to the observer; a call
 * the client cancelled before the server closed it counts as CANCELLED.
 */
public final class GrpcMetricsInterceptor implements ServerInterceptor {
    private final GatewayObserver observer;

    public GrpcMetricsInterceptor(GatewayObserver observer) {
        this.observer = requireNonNull(observer, "observer is null");
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        long started = System.nanoTime();
        String method = call.getMethodDescriptor().getFullMethodName();
        AtomicBoolean reported = new AtomicBoolean();
        ServerCall.Listener<Q> listener = next.startCall(
                new SimpleForwardingServerCall<>(call) {
                    @Override
                    public void close(Status status, Metadata trailers) {
                        if (reported.compareAndSet(false, true)) {
                            observer.grpcCall(method, status.getCode().name(), System.nanoTime() - started);
                        }
                        super.close(status, trailers);
                    }
                },
                headers);
        return new SimpleForwardingServerCallListener<>(listener) {
            @Override
            public void onCancel() {
                if (reported.compareAndSet(false, true)) {
                    observer.grpcCall(method, Status.Code.CANCELLED.name(), System.nanoTime() - started);
                }
                super.onCancel();
            }
        };
    }
}
