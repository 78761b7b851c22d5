package dev.sandgate.gateway.grpc;

import static java.util.Objects.requireNonNull;

import com.google.protobuf.Message;
import dev.sandgate.gateway.error.GatewayException;
import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.SecurityLevel;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * Answers a request whose bytes are not a valid message (invalid UTF-8 in a string field, a truncated field) with
 * {@code INVALID_ARGUMENT} / {@code INVALID_FIELD} naming the field {@value #FIELD}, like any other invalid request.
 *
 * <p>grpc-java parses a request with the method's marshaller before any service code runs; a marshaller that throws
 * fails the call with a bare {@code UNKNOWN "Application error processing RPC"} and a SEVERE stack trace through
 * java.util.logging, per request. {@link #guard} therefore gives each method a request marshaller that never throws: it
 * returns the message or why it could not be parsed, and the method's handler answers the latter itself. The service
 * descriptor keeps its schema, so server reflection is unchanged.
 */
public final class MalformedRequests {
    /** The field a malformed request's BadRequest names: the request as a whole. */
    public static final String FIELD = "request";

    private MalformedRequests() {}

    /** {@code service} with every method guarded; each refusal is reported to {@code log}. */
    public static ServerServiceDefinition guard(ServerServiceDefinition service, MalformedRequestLog log) {
        requireNonNull(service, "service is null");
        requireNonNull(log, "log is null");
        ServiceDescriptor original = service.getServiceDescriptor();
        ServiceDescriptor.Builder descriptor =
                ServiceDescriptor.newBuilder(original.getName()).setSchemaDescriptor(original.getSchemaDescriptor());
        List<ServerMethodDefinition<?, ?>> methods = new ArrayList<>();
        for (ServerMethodDefinition<?, ?> method : service.getMethods()) {
            ServerMethodDefinition<?, ?> guarded = guard(method, log);
            descriptor.addMethod(guarded.getMethodDescriptor());
            methods.add(guarded);
        }
        ServerServiceDefinition.Builder guarded = ServerServiceDefinition.builder(descriptor.build());
        methods.forEach(guarded::addMethod);
        return guarded.build();
    }

    private static <ReqT, RespT> ServerMethodDefinition<Parsed<ReqT>, RespT> guard(
            ServerMethodDefinition<ReqT, RespT> definition, MalformedRequestLog log) {
        MethodDescriptor<ReqT, RespT> method = definition.getMethodDescriptor();
        MethodDescriptor<Parsed<ReqT>, RespT> guarded = method.toBuilder(
                        new ParsingMarshaller<>(method.getRequestMarshaller()), method.getResponseMarshaller())
                .build();
        ServerCallHandler<ReqT, RespT> handler = definition.getServerCallHandler();
        return ServerMethodDefinition.create(guarded, (call, headers) -> {
            GuardedCall<ReqT, RespT> inner = new GuardedCall<>(call, method);
            return new GuardedListener<>(handler.startCall(inner, headers), inner, log);
        });
    }

    /** A request as parsed: the message, or why it is not one. */
    record Parsed<T>(T message, RuntimeException failure) {
        String reason() {
            // grpc's protobuf marshaller wraps protobuf's exception, whose message says what is wrong.
            // Its first sentence: the rest of protobuf's messages guesses at causes.
            Throwable cause = failure.getCause() != null ? failure.getCause() : failure;
            String message = String.valueOf(cause.getMessage());
            int end = message.indexOf(". ");
            return end < 0 ? message : message.substring(0, end + 1);
        }
    }

    private record ParsingMarshaller<T>(MethodDescriptor.Marshaller<T> inner)
            implements MethodDescriptor.Marshaller<Parsed<T>> {
        @Override
        public InputStream stream(Parsed<T> value) {
            return inner.stream(value.message());
        }

        @Override
        public Parsed<T> parse(InputStream stream) {
            try {
                return new Parsed<>(inner.parse(stream), null);
            } catch (RuntimeException e) {
                return new Parsed<>(null, e);
            }
        }
    }

    /** Passes parsed messages on; on the first malformed one it closes the call and passes nothing more on. */
    private static final class GuardedListener<ReqT, RespT> extends ServerCall.Listener<Parsed<ReqT>> {
        private final ServerCall.Listener<ReqT> delegate;
        private final GuardedCall<ReqT, RespT> call;
        private final MalformedRequestLog log;

        GuardedListener(ServerCall.Listener<ReqT> delegate, GuardedCall<ReqT, RespT> call, MalformedRequestLog log) {
            this.delegate = delegate;
            this.call = call;
            this.log = log;
        }

        @Override
        public void onMessage(Parsed<ReqT> parsed) {
            if (call.refused()) {
                return;
            }
            if (parsed.failure() == null) {
                delegate.onMessage(parsed.message());
                return;
            }
            MethodDescriptor<ReqT, RespT> method = call.getMethodDescriptor();
            String type = method.getRequestMarshaller() instanceof MethodDescriptor.PrototypeMarshaller<?> p
                            && p.getMessagePrototype() instanceof Message prototype
                    ? prototype.getDescriptorForType().getFullName()
                    : "request";
            log.refused(method.getFullMethodName(), call.remoteAddress(), parsed.reason());
            StatusRuntimeException status = StatusProto.toStatusRuntimeException(ErrorMapper.toRpcStatus(
                    GatewayException.invalidField(FIELD, "is not a valid " + type + " message: " + parsed.reason())));
            call.refuse(status.getStatus(), status.getTrailers() == null ? new Metadata() : status.getTrailers());
        }

        @Override
        public void onHalfClose() {
            if (!call.refused()) {
                delegate.onHalfClose();
            }
        }

        @Override
        public void onReady() {
            if (!call.refused()) {
                delegate.onReady();
            }
        }

        @Override
        public void onCancel() {
            delegate.onCancel();
        }

        @Override
        public void onComplete() {
            delegate.onComplete();
        }
    }

    /**
     * The call as the method's own handler sees it: of its own request type, and mute once a malformed request closed
     * it (a streaming handler may still answer an earlier message).
     */
    private static final class GuardedCall<ReqT, RespT> extends ServerCall<ReqT, RespT> {
        private final ServerCall<Parsed<ReqT>, RespT> delegate;
        private final MethodDescriptor<ReqT, RespT> method;
        private boolean refused;
        // closed already (by an interceptor that refused the call at its start, say): a malformed request then adds
        // nothing
        private boolean closed;

        GuardedCall(ServerCall<Parsed<ReqT>, RespT> delegate, MethodDescriptor<ReqT, RespT> method) {
            this.delegate = delegate;
            this.method = method;
        }

        synchronized boolean refused() {
            return refused;
        }

        synchronized void refuse(Status status, Metadata trailers) {
            if (!refused) {
                refused = true;
                if (!closed) {
                    closed = true;
                    delegate.close(status, trailers);
                }
            }
        }

        String remoteAddress() {
            return switch (delegate.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR)) {
                case null -> "an unknown address";
                case InetSocketAddress inet -> inet.getHostString() + ":" + inet.getPort();
                case SocketAddress other -> other.toString();
            };
        }

        @Override
        public void request(int numMessages) {
            delegate.request(numMessages);
        }

        @Override
        public synchronized void sendHeaders(Metadata headers) {
            if (!refused) {
                delegate.sendHeaders(headers);
            }
        }

        @Override
        public synchronized void sendMessage(RespT message) {
            if (!refused) {
                delegate.sendMessage(message);
            }
        }

        @Override
        public synchronized void close(Status status, Metadata trailers) {
            if (!refused && !closed) {
                closed = true;
                delegate.close(status, trailers);
            }
        }

        @Override
        public boolean isReady() {
            return delegate.isReady();
        }

        @Override
        public boolean isCancelled() {
            return delegate.isCancelled();
        }

        @Override
        public void setMessageCompression(boolean enabled) {
            delegate.setMessageCompression(enabled);
        }

        @Override
        public void setCompression(String compressor) {
            delegate.setCompression(compressor);
        }

        @Override
        public void setOnReadyThreshold(int numBytes) {
            delegate.setOnReadyThreshold(numBytes);
        }

        @Override
        public SecurityLevel getSecurityLevel() {
            return delegate.getSecurityLevel();
        }

        @Override
        public Attributes getAttributes() {
            return delegate.getAttributes();
        }

        @Override
        public String getAuthority() {
            return delegate.getAuthority();
        }

        @Override
        public MethodDescriptor<ReqT, RespT> getMethodDescriptor() {
            return method;
        }
    }
}
