package dev.sandgate.gateway.grpc;

import static java.util.Objects.requireNonNull;

import com.google.protobuf.ByteOutput;
import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnsafeByteOperations;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import dev.sandgate.api.v1.WatchSandboxesResponse;
import io.grpc.Drainable;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;

/**
 * How watch events reach the wire: an event shared by many streams is serialized once ({@link Encoded}) and each
 * stream writes those bytes as they are. The WatchSandboxes method is bound with a response marshaller that accepts
 * either an {@link Encoded} event or a {@link WatchSandboxesResponse} (snapshot events, which belong to one stream);
 * clients see the ordinary {@code sandgate.v1} wire format.
 */
final class WatchWire {
    private static final MethodDescriptor.Marshaller<WatchSandboxesResponse> PROTO =
            ProtoUtils.marshaller(WatchSandboxesResponse.getDefaultInstance());

    /** The WatchSandboxes method as bound here: same name, type and request marshaller as the generated one. */
    static final MethodDescriptor<WatchSandboxesRequest, Object> METHOD =
            SandboxServiceGrpc.getWatchSandboxesMethod().toBuilder(
                            SandboxServiceGrpc.getWatchSandboxesMethod().getRequestMarshaller(), new EventMarshaller())
                    .build();

    private WatchWire() {}

    /** An event serialized once, written as it is to every stream that sends it. */
    record Encoded(ByteString bytes) {
        Encoded {
            requireNonNull(bytes, "bytes is null");
        }

        static Encoded of(WatchSandboxesResponse event) {
            return new Encoded(event.toByteString());
        }

        WatchSandboxesResponse decode() {
            try {
                return WatchSandboxesResponse.parseFrom(bytes);
            } catch (InvalidProtocolBufferException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /** What a watch stream sends: an {@link Encoded} event or a {@link WatchSandboxesResponse}. */
    interface Sink {
        void watch(WatchSandboxesRequest request, ServerCallStreamObserver<Object> out);
    }

    /**
     * The service definition of {@code service} with WatchSandboxes bound to {@link #METHOD}, calling {@code watch}.
     * Every other method, and the schema descriptor (for reflection), are the generated ones.
     */
    static ServerServiceDefinition bind(ServerServiceDefinition service, Sink watch) {
        ServiceDescriptor generated = service.getServiceDescriptor();
        ServiceDescriptor.Builder descriptor =
                ServiceDescriptor.newBuilder(generated.getName()).setSchemaDescriptor(generated.getSchemaDescriptor());
        for (MethodDescriptor<?, ?> method : generated.getMethods()) {
            descriptor.addMethod(isWatch(method) ? METHOD : method);
        }
        ServerServiceDefinition.Builder bound = ServerServiceDefinition.builder(descriptor.build());
        for (ServerMethodDefinition<?, ?> method : service.getMethods()) {
            if (!isWatch(method.getMethodDescriptor())) {
                bound.addMethod(method);
            }
        }
        bound.addMethod(
                METHOD,
                ServerCalls.asyncServerStreamingCall(
                        (request, out) -> watch.watch(request, (ServerCallStreamObserver<Object>) out)));
        return bound.build();
    }

    private static boolean isWatch(MethodDescriptor<?, ?> method) {
        return method.getFullMethodName().equals(METHOD.getFullMethodName());
    }

    private static final class EventMarshaller implements MethodDescriptor.Marshaller<Object> {
        @Override
        public InputStream stream(Object value) {
            if (value instanceof Encoded encoded) {
                return new BytesStream(encoded.bytes());
            }
            return PROTO.stream((WatchSandboxesResponse) value);
        }

        @Override
        public Object parse(InputStream stream) {
            return PROTO.parse(stream);
        }
    }

    /**
     * The bytes of an encoded event, drained into gRPC's buffer: copied once, straight from the shared bytes (neither
     * read() nor {@link ByteString#writeTo(OutputStream)}, which copies them to a new array first).
     */
    private static final class BytesStream extends InputStream implements KnownLength, Drainable {
        private final ByteString bytes;
        private int position;

        BytesStream(ByteString bytes) {
            this.bytes = bytes;
        }

        @Override
        public int drainTo(OutputStream target) throws IOException {
            int length = bytes.size() - position;
            // gRPC's target copies what it is given before returning: it never keeps or changes the shared bytes.
            UnsafeByteOperations.unsafeWriteTo(position == 0 ? bytes : bytes.substring(position), new ToStream(target));
            position = bytes.size();
            return length;
        }

        @Override
        public int read() {
            return position < bytes.size() ? bytes.byteAt(position++) & 0xff : -1;
        }

        @Override
        public int read(byte[] buffer, int offset, int length) {
            if (position >= bytes.size()) {
                return -1;
            }
            int count = Math.min(length, bytes.size() - position);
            bytes.substring(position, position + count).copyTo(buffer, offset);
            position += count;
            return count;
        }

        @Override
        public int available() {
            return bytes.size() - position;
        }
    }

    /** Writes what protobuf hands it to {@code target}, without a copy of its own. */
    private static final class ToStream extends ByteOutput {
        private final OutputStream target;

        ToStream(OutputStream target) {
            this.target = target;
        }

        @Override
        public void write(byte value) throws IOException {
            target.write(value);
        }

        @Override
        public void write(byte[] value, int offset, int length) throws IOException {
            target.write(value, offset, length);
        }

        @Override
        public void writeLazy(byte[] value, int offset, int length) throws IOException {
            target.write(value, offset, length);
        }

        @Override
        public void write(ByteBuffer value) throws IOException {
            byte[] copy = new byte[value.remaining()];
            value.get(copy);
            target.write(copy);
        }

        @Override
        public void writeLazy(ByteBuffer value) throws IOException {
            write(value);
        }
    }
}
