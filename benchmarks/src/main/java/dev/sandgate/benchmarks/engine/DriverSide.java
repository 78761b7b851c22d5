package dev.sandgate.benchmarks.engine;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.ServiceLoader;
import java.util.UUID;

/**
 * The driver alone: the podman or docker driver, found through {@link ServiceLoader} and configured as the gateway
 * configures it (its defaults but for the socket), called through the SPI in this thread, with no gateway store, no
 * gRPC and no watch subscription. Its figures split the gateway side's cost into what the driver does with the engine
 * and what the gateway adds around it.
 */
final class DriverSide implements LifecycleSide {
    private static final LaunchPolicy POLICY = PolicyDocument.DEFAULT.toLaunchPolicy(1);

    private final ComputeDriver driver;
    private final String image;
    private final String workspace;
    private final Map<String, Sandbox> sandboxes = new HashMap<>();

    private static final class Sandbox {
        final SandboxRef ref;
        long generation = 1;

        Sandbox(SandboxRef ref) {
            this.ref = ref;
        }
    }

    private DriverSide(ComputeDriver driver, String image, String workspace) {
        this.driver = driver;
        this.image = image;
        this.workspace = workspace;
    }

    static DriverSide open(EngineBenchmarkSettings settings, String workspace) {
        String name = settings.engine().driver;
        ComputeDriverProvider provider = ServiceLoader.load(ComputeDriverProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(candidate -> candidate.name().equals(name))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no " + name + " driver on the class path"));
        DriverSettings config = DriverSettings.EMPTY.with(name + ".host", settings.host());
        String gatewayId = "bench-driver-" + UUID.randomUUID().toString().substring(0, 8);
        return new DriverSide(
                provider.create(config, DriverContext.of(gatewayId)),
                requireNonNull(settings.image(), "image is null"),
                workspace);
    }

    @Override
    public String label() {
        return "driver";
    }

    @Override
    public String create(String name) {
        var sandbox = new Sandbox(new SandboxRef(UUID.randomUUID().toString(), workspace, name));
        var spec =
                new SandboxSpec(image, List.of(), List.of("sleep", "3600"), Map.of(), Map.of(), ResourceRequests.NONE);
        driver.create(sandbox.ref, spec, new LaunchInput(1, POLICY));
        sandboxes.put(sandbox.ref.id(), sandbox);
        return sandbox.ref.id();
    }

    @Override
    public void stop(String handle) {
        Sandbox sandbox = sandbox(handle);
        driver.stop(sandbox.ref, OptionalLong.of(sandbox.generation));
    }

    @Override
    public void start(String handle) {
        Sandbox sandbox = sandbox(handle);
        sandbox.generation++;
        driver.start(sandbox.ref, new LaunchInput(sandbox.generation, POLICY));
    }

    @Override
    public void delete(String handle) {
        Sandbox sandbox = sandbox(handle);
        driver.delete(sandbox.ref, OptionalLong.of(sandbox.generation));
        sandboxes.remove(handle);
    }

    private Sandbox sandbox(String handle) {
        Sandbox sandbox = sandboxes.get(handle);
        if (sandbox == null) {
            throw new IllegalArgumentException("no sandbox " + handle + " on the driver side");
        }
        return sandbox;
    }

    @Override
    public void close() {
        driver.close();
    }
}
