package dev.sandgate.benchmarks;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.WireFormat;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.WatchSandboxesRequest;
import io.grpc.MethodDescriptor;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;

/**
 * The watch benchmark's client view of WatchSandboxes: it reads from each event only its type and the observation's
 * time, skipping the sandbox, so that a thousand watchers in the tool's JVM cost little beside the gateway under test.
 * The wire format is the ordinary {@code sandgate.v1.WatchSandboxesResponse}; only the decoding is partial.
 */
final class WatchStamps {
    private static final int TYPE = 1;
    private static final int OBSERVATION = 3;
    private static final int OBSERVE_TIME = 5;
    private static final int SECONDS = 1;
    private static final int NANOS = 2;

    /** WatchSandboxes with responses decoded as {@link Stamp}s. */
    static final MethodDescriptor<WatchSandboxesRequest, Stamp> METHOD =
            SandboxServiceGrpc.getWatchSandboxesMethod().toBuilder(
                            SandboxServiceGrpc.getWatchSandboxesMethod().getRequestMarshaller(), new StampMarshaller())
                    .build();

    private WatchStamps() {}

    /**
     * One event as the benchmark sees it.
     *
     * @param type the {@code WatchEventType} number
     * @param observeEpochNanos the observation's time in nanoseconds since the epoch, 0 when the event has none
     */
    record Stamp(int type, long observeEpochNanos) {
        static final int SNAPSHOT = 1;
        static final int SYNCED = 2;
    }

    /** Reads the type and the observation's time from the bytes of a {@code WatchSandboxesResponse}. */
    static Stamp decode(byte[] bytes) throws IOException {
        CodedInputStream in = CodedInputStream.newInstance(bytes);
        int type = 0;
        long observed = 0;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            int field = WireFormat.getTagFieldNumber(tag);
            if (field == TYPE && WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_VARINT) {
                type = in.readEnum();
            } else if (field == OBSERVATION && WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
                int limit = in.pushLimit(in.readRawVarint32());
                observed = observeTime(in);
                in.popLimit(limit);
            } else if (!in.skipField(tag)) {
                break;
            }
        }
        return new Stamp(type, observed);
    }

    private static long observeTime(CodedInputStream in) throws IOException {
        long observed = 0;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            if (WireFormat.getTagFieldNumber(tag) == OBSERVE_TIME
                    && WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
                int limit = in.pushLimit(in.readRawVarint32());
                long seconds = 0;
                int nanos = 0;
                for (int inner = in.readTag(); inner != 0; inner = in.readTag()) {
                    int field = WireFormat.getTagFieldNumber(inner);
                    if (field == SECONDS && WireFormat.getTagWireType(inner) == WireFormat.WIRETYPE_VARINT) {
                        seconds = in.readInt64();
                    } else if (field == NANOS && WireFormat.getTagWireType(inner) == WireFormat.WIRETYPE_VARINT) {
                        nanos = in.readInt32();
                    } else if (!in.skipField(inner)) {
                        break;
                    }
                }
                in.popLimit(limit);
                observed = seconds * 1_000_000_000L + nanos;
            } else if (!in.skipField(tag)) {
                break;
            }
        }
        return observed;
    }

    private static final class StampMarshaller implements MethodDescriptor.Marshaller<Stamp> {
        @Override
        public InputStream stream(Stamp value) {
            throw new UnsupportedOperationException("the benchmark only reads watch events");
        }

        @Override
        public Stamp parse(InputStream stream) {
            try (stream) {
                // gRPC's stream knows its length: one array of that size (readAllBytes would take 16 KiB per event).
                byte[] bytes = new byte[stream.available()];
                int read = stream.readNBytes(bytes, 0, bytes.length);
                if (read != bytes.length || stream.read() != -1) {
                    throw new IOException("a watch event's length was not known in advance");
                }
                return decode(bytes);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /** For tests: the stream gRPC would hand the marshaller. */
    static Stamp parse(byte[] bytes) {
        return METHOD.parseResponse(new ByteArrayInputStream(bytes));
    }
}
