package dev.sandgate.cli;

import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.SandboxServiceGrpc.SandboxServiceBlockingStub;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** What a command works with: the gateway's channel, the call deadline and the output. */
record Session(ManagedChannel channel, Duration timeout, Printer printer) {
    /** A stub whose unary calls carry the configured deadline. */
    SandboxServiceBlockingStub stub() {
        return SandboxServiceGrpc.newBlockingStub(channel).withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** A stub without a deadline, for streams that last as long as the user wants. */
    SandboxServiceBlockingStub streamingStub() {
        return SandboxServiceGrpc.newBlockingStub(channel);
    }
}
