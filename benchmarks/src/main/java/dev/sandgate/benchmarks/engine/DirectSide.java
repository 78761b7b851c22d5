package dev.sandgate.benchmarks.engine;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.CreateContainerCmd;
import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.Ulimit;
import com.github.dockerjava.api.model.Volume;
import dev.sandgate.benchmarks.engine.EngineBenchmarkSettings.Engine;
import dev.sandgate.driver.container.ContainerNaming;
import dev.sandgate.driver.container.ContainerStamps;
import dev.sandgate.spi.Labels;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The baseline: the engine calls the container driver makes to mutate a sandbox, made directly with docker-java (same
 * client and transport settings as the driver's), without the driver's lookups or the gateway's store:
 *
 * <ul>
 *   <li>create: create the labelled workspace volume, create the container (the driver's labels, init, the volume at
 *       {@value ContainerNaming#WORKSPACE_PATH}, network none, on Podman the driver's default ulimits), start it
 *   <li>stop: stop with the driver's default grace period, then inspect until the engine reports it not running
 *   <li>start: a container is one execution, so create the next generation's container, remove the old one, start the
 *       new one (the driver's order: the new container exists before the old one goes, and starts only once the old
 *       one is known to have been there)
 *   <li>delete: remove the container (forced), then its volume
 * </ul>
 */
final class DirectSide implements LifecycleSide {
    /** The drivers' default stop grace period ({@code <driver>.stop-grace-period}). */
    private static final int STOP_GRACE_SECONDS = 10;
    /** What the podman driver sets by default ({@code podman.ulimits}). */
    private static final List<Ulimit> PODMAN_ULIMITS =
            List.of(new Ulimit("nofile", 16384L, 16384L), new Ulimit("nproc", 32768L, 32768L));

    private static final String POLICY_DIGEST = "sha256:" + "0".repeat(64);

    private final DockerClient client;
    private final Engine engine;
    private final String image;
    private final String workspace;
    private final String gatewayId = "bench-direct-" + UUID.randomUUID();
    private final Map<String, Sandbox> sandboxes = new HashMap<>();

    private static final class Sandbox {
        final String id = UUID.randomUUID().toString();
        final String name;
        long generation = 1;
        String containerId;

        Sandbox(String name) {
            this.name = name;
        }
    }

    DirectSide(DockerClient client, Engine engine, String image, String workspace) {
        this.client = requireNonNull(client, "client is null");
        this.engine = requireNonNull(engine, "engine is null");
        this.image = requireNonNull(image, "image is null");
        this.workspace = requireNonNull(workspace, "workspace is null");
    }

    @Override
    public String label() {
        return "direct docker-java";
    }

    @Override
    public String create(String name) {
        Sandbox sandbox = new Sandbox(name);
        client.createVolumeCmd()
                .withName(volumeName(sandbox))
                .withLabels(identity(sandbox))
                .exec();
        sandbox.containerId = createContainer(sandbox);
        client.startContainerCmd(sandbox.containerId).exec();
        sandboxes.put(sandbox.id, sandbox);
        return sandbox.id;
    }

    @Override
    public void stop(String handle) {
        Sandbox sandbox = sandbox(handle);
        client.stopContainerCmd(sandbox.containerId)
                .withTimeout(STOP_GRACE_SECONDS)
                .exec();
        long deadline =
                System.nanoTime() + Duration.ofSeconds(STOP_GRACE_SECONDS + 60).toNanos();
        long pauseMillis = 20;
        while (Boolean.TRUE.equals(client.inspectContainerCmd(sandbox.containerId)
                .exec()
                .getState()
                .getRunning())) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("container " + sandbox.containerId + " still runs after the stop");
            }
            sleep(pauseMillis);
            pauseMillis = Math.min(pauseMillis * 2, 500);
        }
    }

    @Override
    public void start(String handle) {
        Sandbox sandbox = sandbox(handle);
        String previous = sandbox.containerId;
        sandbox.generation++;
        sandbox.containerId = createContainer(sandbox);
        client.removeContainerCmd(previous)
                .withForce(true)
                .withRemoveVolumes(false)
                .exec();
        client.startContainerCmd(sandbox.containerId).exec();
    }

    @Override
    public void delete(String handle) {
        Sandbox sandbox = sandbox(handle);
        client.removeContainerCmd(sandbox.containerId)
                .withForce(true)
                .withRemoveVolumes(false)
                .exec();
        client.removeVolumeCmd(volumeName(sandbox)).exec();
        sandboxes.remove(handle);
    }

    private String createContainer(Sandbox sandbox) {
        HostConfig hostConfig = HostConfig.newHostConfig()
                .withInit(true)
                .withBinds(new Bind(volumeName(sandbox), new Volume(ContainerNaming.WORKSPACE_PATH)))
                .withNetworkMode("none")
                .withReadonlyRootfs(false);
        switch (engine) {
            case PODMAN -> hostConfig.withUlimits(PODMAN_ULIMITS);
            case DOCKER -> {}
        }
        Map<String, String> labels = identity(sandbox);
        labels.put(Labels.GENERATION, Long.toString(sandbox.generation));
        labels.put(Labels.POLICY_DIGEST, POLICY_DIGEST);
        labels.put(ContainerStamps.USER_LABEL_KEYS, "");
        try (CreateContainerCmd command = client.createContainerCmd(image)) {
            return command.withName("sandgate-" + workspace + "-" + sandbox.name + "-" + sandbox.id.substring(0, 8)
                            + "-g" + sandbox.generation)
                    .withLabels(labels)
                    .withEnv(List.of())
                    .withStopTimeout(STOP_GRACE_SECONDS)
                    .withHostConfig(hostConfig)
                    .withCmd("sleep", "3600")
                    .exec()
                    .getId();
        }
    }

    private Map<String, String> identity(Sandbox sandbox) {
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE);
        labels.put(Labels.GATEWAY_ID, gatewayId);
        labels.put(Labels.SANDBOX_ID, sandbox.id);
        labels.put(Labels.WORKSPACE, workspace);
        labels.put(Labels.NAME, sandbox.name);
        return labels;
    }

    private static String volumeName(Sandbox sandbox) {
        return ContainerNaming.volumeName(sandbox.id);
    }

    private Sandbox sandbox(String handle) {
        Sandbox sandbox = sandboxes.get(handle);
        if (sandbox == null) {
            throw new IllegalArgumentException("no sandbox " + handle + " on the direct side");
        }
        return sandbox;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for a stop", e);
        }
    }

    @Override
    public void close() {
        try {
            client.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
