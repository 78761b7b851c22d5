package dev.sandgate.gateway.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.gateway.testing.GrpcErrors;
import dev.sandgate.gateway.testing.TestGateway;
import io.grpc.CallOptions;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.stub.ClientCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Request bytes that are not a valid protobuf message get INVALID_ARGUMENT with ErrorInfo and BadRequest, not grpc's
 * bare UNKNOWN, and grpc logs no stack trace for them. The bytes are sent raw, through a ClientCall whose marshaller
 * passes them unchanged, over real Netty.
 */
class MalformedRequestTest {
    /** Field 2 (workspace, a string) holding the single byte 0xFF: not UTF-8. */
    private static final byte[] INVALID_UTF8 = {0x12, 0x01, (byte) 0xFF};
    /** Field 2 announcing 5 bytes of which 1 follows. */
    private static final byte[] TRUNCATED = {0x12, 0x05, 'a'};

    @TempDir
    Path root;

    TestGateway gateway;
    /** Held: java.util.logging keeps loggers only weakly, and the handler must stay on this one. */
    Logger grpcLogger;

    final List<LogRecord> grpcRecords = new CopyOnWriteArrayList<>();
    final Handler capture = new Handler() {
        @Override
        public void publish(LogRecord record) {
            grpcRecords.add(record);
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };

    @BeforeEach
    void start() {
        grpcLogger = Logger.getLogger("io.grpc");
        grpcLogger.addHandler(capture);
        gateway = TestGateway.start(root, TestGateway.Transport.NETTY);
    }

    @AfterEach
    void stop() {
        gateway.close();
        grpcLogger.removeHandler(capture);
    }

    @Test
    @DisplayName("a string field with invalid UTF-8 gets INVALID_ARGUMENT / INVALID_FIELD naming the request")
    void invalidUtf8IsInvalidArgument() {
        GrpcErrors.Failure failure = GrpcErrors.failure(() -> sendRaw("CreateSandbox", INVALID_UTF8));

        assertThat(failure.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(failure.reason()).isEqualTo("INVALID_FIELD");
        assertThat(failure.field()).contains("request");
        assertThat(failure.message())
                .contains("sandgate.v1.CreateSandboxRequest")
                .contains("UTF-8");
    }

    @Test
    @DisplayName("a truncated field gets INVALID_ARGUMENT / INVALID_FIELD, on a server-streaming method too")
    void truncatedFieldIsInvalidArgument() {
        GrpcErrors.Failure unary = GrpcErrors.failure(() -> sendRaw("ListSandboxes", TRUNCATED));
        GrpcErrors.Failure watch = GrpcErrors.failure(() -> ClientCalls.blockingServerStreamingCall(
                        gateway.channel(),
                        raw("sandgate.v1.SandboxService/WatchSandboxes", MethodDescriptor.MethodType.SERVER_STREAMING),
                        CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS),
                        TRUNCATED)
                .next());

        assertThat(unary.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(unary.field()).contains("request");
        assertThat(watch.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(watch.reason()).isEqualTo("INVALID_FIELD");
    }

    @Test
    @DisplayName("the health service refuses malformed bytes with INVALID_ARGUMENT too")
    void healthRefusesMalformedBytes() {
        GrpcErrors.Failure failure = GrpcErrors.failure(() -> ClientCalls.blockingUnaryCall(
                gateway.channel(),
                raw(HealthGrpc.getCheckMethod().getFullMethodName(), MethodDescriptor.MethodType.UNARY),
                CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS),
                new byte[] {0x0A, 0x01, (byte) 0xFF}));

        assertThat(failure.code()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    }

    @Test
    @DisplayName("grpc logs nothing at WARNING or above for malformed requests, and the connection keeps serving")
    void grpcLogsNoStackTrace() {
        for (int i = 0; i < 5; i++) {
            GrpcErrors.failure(() -> sendRaw("CreateSandbox", INVALID_UTF8));
            GrpcErrors.failure(() -> sendRaw("StopSandbox", TRUNCATED));
        }
        // A call on the same connection after them: the server handled the malformed ones (and would have logged on
        // that connection's thread) before it read this one.
        GrpcErrors.Failure next = GrpcErrors.failure(() -> gateway.stub()
                .getSandbox(GetSandboxRequest.newBuilder()
                        .setTarget(TestGateway.byName("ws", "absent"))
                        .build()));

        assertThat(next.code()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(grpcRecords)
                .filteredOn(r -> r.getLevel().intValue() >= Level.WARNING.intValue())
                .extracting(r -> r.getLoggerName() + ": " + r.getMessage())
                .isEmpty();
    }

    private byte[] sendRaw(String method, byte[] body) {
        return ClientCalls.blockingUnaryCall(
                gateway.channel(),
                raw(SandboxServiceGrpc.SERVICE_NAME + "/" + method, MethodDescriptor.MethodType.UNARY),
                CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS),
                body);
    }

    private static MethodDescriptor<byte[], byte[]> raw(String fullName, MethodDescriptor.MethodType type) {
        return MethodDescriptor.newBuilder(Bytes.INSTANCE, Bytes.INSTANCE)
                .setFullMethodName(fullName)
                .setType(type)
                .build();
    }

    /** Passes bytes through unchanged. */
    private enum Bytes implements MethodDescriptor.Marshaller<byte[]> {
        INSTANCE;

        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
