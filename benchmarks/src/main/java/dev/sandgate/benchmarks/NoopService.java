package dev.sandgate.benchmarks;

import com.google.protobuf.Empty;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ServerCalls;

/**
 * A bare grpc-java unary method that does nothing: {@code sandgate.bench.Noop/Call(Empty) returns Empty}. Registered
 * on the gateway's own server, it measures what gRPC, Netty and the loopback cost by themselves, so the gateway's
 * overhead is a ratio measured side by side.
 */
final class NoopService {
    static final MethodDescriptor<Empty, Empty> CALL = MethodDescriptor.<Empty, Empty>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(MethodDescriptor.generateFullMethodName("sandgate.bench.Noop", "Call"))
            .setRequestMarshaller(ProtoUtils.marshaller(Empty.getDefaultInstance()))
            .setResponseMarshaller(ProtoUtils.marshaller(Empty.getDefaultInstance()))
            .build();

    private NoopService() {}

    static ServerServiceDefinition definition() {
        return ServerServiceDefinition.builder("sandgate.bench.Noop")
                .addMethod(CALL, ServerCalls.asyncUnaryCall((request, reply) -> {
                    reply.onNext(Empty.getDefaultInstance());
                    reply.onCompleted();
                }))
                .build();
    }
}
