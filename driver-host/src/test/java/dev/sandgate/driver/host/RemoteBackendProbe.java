package dev.sandgate.driver.host;

import dev.sandgate.conformance.AppliedPolicy;
import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.BackendResource;
import dev.sandgate.driver.remote.Channels;
import dev.sandgate.driver.remote.DriverWire;
import dev.sandgate.driver.remote.RemoteSettings;
import dev.sandgate.driver.v1.AppliedPolicyRequest;
import dev.sandgate.driver.v1.CloseProbeRequest;
import dev.sandgate.driver.v1.DriverProbeGrpc;
import dev.sandgate.driver.v1.LaunchedEnvironmentRequest;
import dev.sandgate.driver.v1.PlantRequest;
import dev.sandgate.driver.v1.ReadWorkspaceMarkerRequest;
import dev.sandgate.driver.v1.RemoveRequest;
import dev.sandgate.driver.v1.ResourcesOfGatewayRequest;
import dev.sandgate.driver.v1.ResourcesRequest;
import dev.sandgate.driver.v1.WriteWorkspaceMarkerRequest;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.SandboxRef;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The kit's {@link BackendProbe} for a driver not written in Java: it calls the {@code DriverProbe} service that the
 * driver's test build serves next to its driver (see "PROBES" in driver.proto). A missing resource, which the
 * service answers FAILED_PRECONDITION, is the {@link IllegalStateException} the kit expects.
 */
public final class RemoteBackendProbe implements BackendProbe {
    private final ManagedChannel channel;
    private final DriverProbeGrpc.DriverProbeBlockingStub probe;

    public RemoteBackendProbe(DriverSettings remoteConfig) {
        this.channel = Channels.open(RemoteSettings.from(remoteConfig));
        this.probe = DriverProbeGrpc.newBlockingStub(channel);
    }

    private DriverProbeGrpc.DriverProbeBlockingStub call() {
        return probe.withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    @Override
    public BackendResource plant(SandboxRef ref, String gatewayId, String policyDigest) {
        return resource(call().plant(PlantRequest.newBuilder()
                .setRef(DriverWire.toProto(ref))
                .setGatewayId(gatewayId)
                .setPolicyDigest(policyDigest)
                .build()));
    }

    @Override
    public BackendResource plantStopped(SandboxRef ref, String gatewayId, String policyDigest) {
        return resource(call().plant(PlantRequest.newBuilder()
                .setRef(DriverWire.toProto(ref))
                .setGatewayId(gatewayId)
                .setPolicyDigest(policyDigest)
                .setStopped(true)
                .build()));
    }

    @Override
    public List<BackendResource> resources(String sandboxId) {
        return call()
                .resources(ResourcesRequest.newBuilder().setSandboxId(sandboxId).build())
                .getResourcesList()
                .stream()
                .map(RemoteBackendProbe::resource)
                .toList();
    }

    @Override
    public List<BackendResource> resourcesOfGateway(String gatewayId) {
        return call()
                .resourcesOfGateway(ResourcesOfGatewayRequest.newBuilder()
                        .setGatewayId(gatewayId)
                        .build())
                .getResourcesList()
                .stream()
                .map(RemoteBackendProbe::resource)
                .toList();
    }

    @Override
    public void remove(String sandboxId) {
        call().remove(RemoveRequest.newBuilder().setSandboxId(sandboxId).build());
    }

    @Override
    public void writeWorkspaceMarker(SandboxRef ref, String marker) {
        missingIsIllegalState(() -> call().writeWorkspaceMarker(WriteWorkspaceMarkerRequest.newBuilder()
                .setRef(DriverWire.toProto(ref))
                .setMarker(marker)
                .build()));
    }

    @Override
    public Optional<String> readWorkspaceMarker(SandboxRef ref) {
        var answer = missingIsIllegalState(() -> call().readWorkspaceMarker(ReadWorkspaceMarkerRequest.newBuilder()
                .setRef(DriverWire.toProto(ref))
                .build()));
        return answer.getPresent() ? Optional.of(answer.getMarker()) : Optional.empty();
    }

    @Override
    public AppliedPolicy appliedPolicy(SandboxRef ref) {
        var answer = missingIsIllegalState(() -> call().appliedPolicy(AppliedPolicyRequest.newBuilder()
                .setRef(DriverWire.toProto(ref))
                .build()));
        return new AppliedPolicy(
                DriverWire.staticPolicy(answer.getStaticPolicy()), new DynamicPolicy(answer.getNetworkAllowListList()));
    }

    @Override
    public Map<String, String> launchedEnvironment(SandboxRef ref) {
        return missingIsIllegalState(() -> call().launchedEnvironment(LaunchedEnvironmentRequest.newBuilder()
                        .setRef(DriverWire.toProto(ref))
                        .build()))
                .getEnvironmentMap();
    }

    @Override
    public void close() {
        try {
            call().closeProbe(CloseProbeRequest.getDefaultInstance());
        } finally {
            channel.shutdownNow();
        }
    }

    private static <T> T missingIsIllegalState(java.util.function.Supplier<T> call) {
        try {
            return call.get();
        } catch (StatusRuntimeException e) {
            if (e.getStatus().getCode() == Status.Code.FAILED_PRECONDITION) {
                throw new IllegalStateException(e.getStatus().getDescription(), e);
            }
            throw e;
        }
    }

    private static BackendResource resource(dev.sandgate.driver.v1.BackendResource resource) {
        return new BackendResource(resource.getBackendId(), resource.getRunning(), resource.getStampsMap());
    }
}
