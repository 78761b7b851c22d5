package dev.sandgate.benchmarks;

import static java.util.Objects.requireNonNull;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.SandboxServiceGrpc.SandboxServiceBlockingStub;
import dev.sandgate.api.v1.SandboxSpec;
import dev.sandgate.api.v1.SandboxTarget;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StopSandboxRequest;
import io.grpc.Channel;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * The benchmarks' client of the lifecycle API, as clients are advised to call it: every mutating call carries a fresh
 * {@code request_id} and a deadline, and stop, start and delete name the sandbox by id. Every sandbox runs {@code
 * sleep 3600} in {@code image}.
 */
public final class LifecycleClient {
    private final SandboxServiceBlockingStub sandboxes;
    private final Duration deadline;
    private final String image;

    public LifecycleClient(Channel channel, Duration deadline, String image) {
        this.sandboxes = SandboxServiceGrpc.newBlockingStub(requireNonNull(channel, "channel is null"));
        this.deadline = requireNonNull(deadline, "deadline is null");
        this.image = requireNonNull(image, "image is null");
    }

    /** Creates {@code workspace/name} and returns its id. */
    public String create(String workspace, String name) {
        return stub().createSandbox(CreateSandboxRequest.newBuilder()
                        .setRequestId(UUID.randomUUID().toString())
                        .setWorkspace(workspace)
                        .setName(name)
                        .setSpec(SandboxSpec.newBuilder()
                                .setImage(image)
                                .addArgs("sleep")
                                .addArgs("3600"))
                        .build())
                .getSandbox()
                .getId();
    }

    public void stop(String id) {
        stub().stopSandbox(StopSandboxRequest.newBuilder()
                .setRequestId(UUID.randomUUID().toString())
                .setTarget(target(id))
                .build());
    }

    public void start(String id) {
        stub().startSandbox(StartSandboxRequest.newBuilder()
                .setRequestId(UUID.randomUUID().toString())
                .setTarget(target(id))
                .build());
    }

    public void delete(String id) {
        stub().deleteSandbox(DeleteSandboxRequest.newBuilder()
                .setRequestId(UUID.randomUUID().toString())
                .setTarget(target(id))
                .build());
    }

    /** The stub with this client's deadline, for calls this class does not wrap. */
    public SandboxServiceBlockingStub stub() {
        return sandboxes.withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS);
    }

    private static SandboxTarget target(String id) {
        return SandboxTarget.newBuilder().setId(id).build();
    }
}
