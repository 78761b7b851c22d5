package dev.sandgate.driver.host;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.v1.CallContext;
import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxRef;
import java.time.Clock;
import java.util.ArrayList;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The driver instances a host serves: one per (gateway id, instance id) of the clients' {@link CallContext}s, created
 * at the first call. Each gets a mutation hook that forwards to the announcer of the call running on the current
 * thread.
 */
final class HostedInstances implements AutoCloseable {
    private record Key(String gatewayId, String instanceId) {}

    private static final ThreadLocal<MutationAnnouncer> CURRENT = new ThreadLocal<>();

    private final ComputeDriverProvider provider;
    private final DriverSettings config;
    private final ConcurrentHashMap<Key, ComputeDriver> instances = new ConcurrentHashMap<>();

    HostedInstances(ComputeDriverProvider provider, DriverSettings config) {
        this.provider = requireNonNull(provider, "provider is null");
        this.config = requireNonNull(config, "config is null");
    }

    ComputeDriverProvider provider() {
        return provider;
    }

    Availability availability() {
        return provider.availability(config);
    }

    /** The instance of {@code context}, created on first use. */
    ComputeDriver instance(CallContext context) {
        if (context.getInstanceId().isEmpty()) {
            throw DriverException.invalidArgument("context.instance_id", "is required");
        }
        var key = new Key(context.getGatewayId(), context.getInstanceId());
        return instances.computeIfAbsent(key, missing -> create(missing.gatewayId()));
    }

    /** A driver instance outside any client's session (for the handshake's capabilities). */
    ComputeDriver create(String gatewayId) {
        MutationHook hook = HostedInstances::beforeMutation;
        return provider.create(config, new DriverContext(gatewayId, Clock.systemUTC(), hook));
    }

    void close(CallContext context) {
        ComputeDriver instance = instances.remove(new Key(context.getGatewayId(), context.getInstanceId()));
        if (instance != null) {
            instance.close();
        }
    }

    /** Runs {@code work} with {@code announcer} as the hook of the driver calls made on this thread. */
    static <T> T withAnnouncer(MutationAnnouncer announcer, java.util.function.Supplier<T> work) {
        CURRENT.set(announcer);
        try {
            return work.get();
        } finally {
            CURRENT.remove();
        }
    }

    private static void beforeMutation(SandboxRef ref, MutationHook.Operation operation, String backendId) {
        MutationAnnouncer announcer = CURRENT.get();
        if (announcer == null) {
            throw new DriverException(
                    dev.sandgate.spi.DriverErrorCode.INTERNAL,
                    "the driver called its mutation hook outside a create, start, stop or delete call's thread");
        }
        announcer.announce(ref, operation, backendId);
    }

    @Override
    public void close() {
        for (ComputeDriver instance : new ArrayList<>(instances.values())) {
            instance.close();
        }
        instances.clear();
    }
}
