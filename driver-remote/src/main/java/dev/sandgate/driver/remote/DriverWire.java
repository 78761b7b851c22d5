package dev.sandgate.driver.remote;

import com.google.protobuf.ByteString;
import dev.sandgate.driver.v1.Capabilities;
import dev.sandgate.driver.v1.MutationOperation;
import dev.sandgate.driver.v1.WatchEvent;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.MutationHook.Operation;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.PolicyField;
import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.StaticPolicy;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;

/**
 * The one mapper between the SPI's types and {@code sandgate.driver.v1}, used by the client ({@link
 * RemoteDriver}) and the driver host alike. Decoding goes through the SPI's records, so a malformed message is
 * refused with INVALID_ARGUMENT naming the field, as in process.
 */
public final class DriverWire {
    private DriverWire() {}

    public static dev.sandgate.driver.v1.SandboxRef toProto(SandboxRef ref) {
        return dev.sandgate.driver.v1.SandboxRef.newBuilder()
                .setId(ref.id())
                .setWorkspace(ref.workspace())
                .setName(ref.name())
                .build();
    }

    public static SandboxRef ref(dev.sandgate.driver.v1.SandboxRef ref) {
        return new SandboxRef(ref.getId(), ref.getWorkspace(), ref.getName());
    }

    public static dev.sandgate.driver.v1.SandboxSpec toProto(SandboxSpec spec) {
        return dev.sandgate.driver.v1.SandboxSpec.newBuilder()
                .setImage(spec.image())
                .addAllCommand(spec.command())
                .addAllArgs(spec.args())
                .putAllEnvironment(spec.environment())
                .putAllLabels(spec.labels())
                .setMemoryRequestBytes(spec.resources().memoryBytes())
                .setMilliCpusRequest(spec.resources().milliCpus())
                .build();
    }

    public static SandboxSpec spec(dev.sandgate.driver.v1.SandboxSpec spec) {
        return new SandboxSpec(
                spec.getImage(),
                spec.getCommandList(),
                spec.getArgsList(),
                spec.getEnvironmentMap(),
                spec.getLabelsMap(),
                new ResourceRequests(spec.getMemoryRequestBytes(), spec.getMilliCpusRequest()));
    }

    public static dev.sandgate.driver.v1.StaticPolicy toProto(StaticPolicy policy) {
        return dev.sandgate.driver.v1.StaticPolicy.newBuilder()
                .setReadOnlyRootFilesystem(policy.readOnlyRootFilesystem())
                .setNetworkMode(policy.networkMode().name())
                .addAllDropCapabilities(policy.dropCapabilities())
                .setNoNewPrivileges(policy.noNewPrivileges())
                .setMemoryLimitBytes(policy.memoryLimitBytes())
                .setCpuLimitMillis(policy.cpuLimitMillis())
                .setPidsLimit(policy.pidsLimit())
                .build();
    }

    public static StaticPolicy staticPolicy(dev.sandgate.driver.v1.StaticPolicy policy) {
        return new StaticPolicy(
                policy.getReadOnlyRootFilesystem(),
                named(NetworkMode.class, "policy.static.network_mode", policy.getNetworkMode()),
                new HashSet<>(policy.getDropCapabilitiesList()),
                policy.getNoNewPrivileges(),
                policy.getMemoryLimitBytes(),
                policy.getCpuLimitMillis(),
                policy.getPidsLimit());
    }

    public static dev.sandgate.driver.v1.LaunchInput toProto(LaunchInput launch) {
        LaunchPolicy policy = launch.policy();
        return dev.sandgate.driver.v1.LaunchInput.newBuilder()
                .setGeneration(launch.generation())
                .setPolicy(dev.sandgate.driver.v1.LaunchPolicy.newBuilder()
                        .setRevision(policy.revision())
                        .setDigest(policy.digest())
                        .setCanonicalDocument(ByteString.copyFrom(policy.canonicalDocument()))
                        .setStaticPolicy(toProto(policy.staticPolicy()))
                        .addAllNetworkAllowList(policy.dynamicPolicy().networkAllowList()))
                .build();
    }

    public static LaunchInput launchInput(dev.sandgate.driver.v1.LaunchInput launch) {
        var policy = launch.getPolicy();
        return new LaunchInput(
                launch.getGeneration(),
                new LaunchPolicy(
                        policy.getRevision(),
                        policy.getDigest(),
                        policy.getCanonicalDocument().toByteArray(),
                        staticPolicy(policy.getStaticPolicy()),
                        new DynamicPolicy(policy.getNetworkAllowListList())));
    }

    public static dev.sandgate.driver.v1.SandboxObservation toProto(SandboxObservation observation) {
        return dev.sandgate.driver.v1.SandboxObservation.newBuilder()
                .setRef(toProto(observation.ref()))
                .setGeneration(observation.generation())
                .setState(observation.state().name())
                .setPolicyDigest(observation.policyDigest())
                .putAllLabels(observation.labels())
                .setDetail(observation.detail())
                .build();
    }

    public static SandboxObservation observation(dev.sandgate.driver.v1.SandboxObservation observation) {
        return new SandboxObservation(
                ref(observation.getRef()),
                observation.getGeneration(),
                named(SandboxState.class, "observation.state", observation.getState()),
                observation.getPolicyDigest(),
                observation.getLabelsMap(),
                observation.getDetail());
    }

    public static Capabilities toProto(DriverCapabilities capabilities) {
        return Capabilities.newBuilder()
                .addAllEnforceablePolicyFields(capabilities.enforceablePolicyFields().stream()
                        .map(Enum::name)
                        .sorted()
                        .toList())
                .setLaunchPolicyOnStart(capabilities.launchPolicyOnStart())
                .setPersistentWorkspace(capabilities.persistentWorkspace())
                .build();
    }

    /**
     * Field names this side does not know are dropped: it never sends a policy that uses them. Exec and logs are not
     * forwarded over sandgate.driver.v1, so a remote driver claims neither (its calls are UNSUPPORTED), whatever the
     * hosted driver can do.
     */
    public static DriverCapabilities capabilities(Capabilities capabilities) {
        Set<PolicyField> fields = EnumSet.noneOf(PolicyField.class);
        for (String name : capabilities.getEnforceablePolicyFieldsList()) {
            for (PolicyField field : PolicyField.values()) {
                if (field.name().equals(name)) {
                    fields.add(field);
                }
            }
        }
        return new DriverCapabilities(
                fields, capabilities.getLaunchPolicyOnStart(), capabilities.getPersistentWorkspace());
    }

    public static MutationOperation toProto(Operation operation) {
        return switch (operation) {
            case STOP -> MutationOperation.MUTATION_OPERATION_STOP;
            case START -> MutationOperation.MUTATION_OPERATION_START;
            case DELETE -> MutationOperation.MUTATION_OPERATION_DELETE;
        };
    }

    public static Operation operation(MutationOperation operation) {
        return switch (operation) {
            case MUTATION_OPERATION_STOP -> Operation.STOP;
            case MUTATION_OPERATION_START -> Operation.START;
            case MUTATION_OPERATION_DELETE -> Operation.DELETE;
            case MUTATION_OPERATION_UNSPECIFIED, UNRECOGNIZED ->
                throw DriverException.invalidArgument("announcement.operation", "must be STOP, START or DELETE");
        };
    }

    public static WatchEvent toProto(SandboxEvent event) {
        return switch (event) {
            case SandboxEvent.Snapshot snapshot ->
                WatchEvent.newBuilder()
                        .setSnapshot(toProto(snapshot.observation()))
                        .build();
            case SandboxEvent.Deleted deleted ->
                WatchEvent.newBuilder()
                        .setDeleted(WatchEvent.Deleted.newBuilder()
                                .setRef(toProto(deleted.ref()))
                                .setGeneration(deleted.generation()))
                        .build();
            case SandboxEvent.Platform platform ->
                WatchEvent.newBuilder()
                        .setPlatform(WatchEvent.Platform.newBuilder()
                                .setRef(toProto(platform.ref()))
                                .setGeneration(platform.generation())
                                .setType(platform.type())
                                .setMessage(platform.message()))
                        .build();
            case SandboxEvent.Synced synced ->
                WatchEvent.newBuilder()
                        .setSynced(WatchEvent.Synced.getDefaultInstance())
                        .build();
        };
    }

    /** The SPI event of {@code event}; a {@code subscribed} event has none and is refused. */
    public static SandboxEvent event(WatchEvent event) {
        return switch (event.getKindCase()) {
            case SNAPSHOT -> new SandboxEvent.Snapshot(observation(event.getSnapshot()));
            case SYNCED -> new SandboxEvent.Synced();
            case DELETED ->
                new SandboxEvent.Deleted(
                        ref(event.getDeleted().getRef()), event.getDeleted().getGeneration());
            case PLATFORM ->
                new SandboxEvent.Platform(
                        ref(event.getPlatform().getRef()),
                        event.getPlatform().getGeneration(),
                        event.getPlatform().getType(),
                        event.getPlatform().getMessage());
            case SUBSCRIBED, KIND_NOT_SET ->
                throw DriverException.invalidArgument("watch_event.kind", "must be a sandbox event");
        };
    }

    private static <E extends Enum<E>> E named(Class<E> type, String field, String name) {
        try {
            return Enum.valueOf(type, name.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw DriverException.invalidArgument(field, "'" + name + "' is not one of " + EnumSet.allOf(type));
        }
    }
}
