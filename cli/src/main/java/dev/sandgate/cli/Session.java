package dev.sandgate.cli;

import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.SandboxServiceGrpc.SandboxServiceBlockingStub;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.stub.MetadataUtils;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * What a command works with: the gateway's channel, the call deadline, the output and the bearer token its calls
 * carry, if any.
 */
record Session(ManagedChannel channel, Duration timeout, Printer printer, Optional<String> token) {
    private static final Metadata.Key<String> AUTHORIZATION =
            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    Session(ManagedChannel channel, Duration timeout, Printer printer) {
        this(channel, timeout, printer, Optional.empty());
    }

    /** A stub whose unary calls carry the configured deadline. */
    SandboxServiceBlockingStub stub() {
        return streamingStub().withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** A stub without a deadline, for streams that last as long as the user wants. */
    SandboxServiceBlockingStub streamingStub() {
        SandboxServiceBlockingStub stub = SandboxServiceGrpc.newBlockingStub(channel);
        if (token.isEmpty()) {
            return stub;
        }
        Metadata headers = new Metadata();
        headers.put(AUTHORIZATION, "Bearer " + token.get());
        return stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
    }
}
