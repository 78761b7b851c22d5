package dev.sandgate.driver.container.testing;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.command.InspectExecResponse;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.Volume;
import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.BackendResource;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.SandboxRef;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A {@link BackendProbe} for the container drivers, on docker-java directly (never through the driver): a sandbox is
 * its containers (one per execution) and its workspace volume, found by their labels.
 *
 * <p>{@link #resources} lists containers, the runtime resources that carry an execution; {@link #resourcesOfGateway}
 * lists containers and volumes (a volume's backend id is {@code volume/<name>}), so that a leaked volume is caught.
 */
public final class DockerJavaBackendProbe implements BackendProbe {
    /** Where {@link #writeWorkspaceMarker} writes, inside the workspace volume. */
    public static final String MARKER_PATH = "/workspace/.sandgate-kit-marker";

    private static final Duration EXEC_TIMEOUT = Duration.ofSeconds(60);

    private final TestEngine engine;
    private final DockerClient client;
    private final Set<String> plantedContainers = ConcurrentHashMap.newKeySet();
    private final Set<String> plantedVolumes = ConcurrentHashMap.newKeySet();

    public DockerJavaBackendProbe(TestEngine engine) {
        this.engine = requireNonNull(engine, "engine is null");
        this.client = engine.client();
    }

    /** The probe's own docker-java client, for checks a test makes beyond the {@link BackendProbe} interface. */
    public DockerClient client() {
        return client;
    }

    @Override
    public BackendResource plant(SandboxRef ref, String gatewayId, String policyDigest) {
        return plant(ref, gatewayId, policyDigest, true);
    }

    /**
     * Like {@link #plant}, but leaves the container created and not started: what a driver that stopped between
     * creating and starting a container leaves behind.
     */
    public BackendResource plantCreated(SandboxRef ref, String gatewayId, String policyDigest) {
        return plant(ref, gatewayId, policyDigest, false);
    }

    private BackendResource plant(SandboxRef ref, String gatewayId, String policyDigest, boolean start) {
        String volume = "sandgate-" + ref.id() + "-workspace";
        Map<String, String> identity = new LinkedHashMap<>();
        identity.put(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE);
        identity.put(Labels.GATEWAY_ID, gatewayId);
        identity.put(Labels.SANDBOX_ID, ref.id());
        identity.put(Labels.WORKSPACE, ref.workspace());
        identity.put(Labels.NAME, ref.name());
        try {
            client.inspectVolumeCmd(volume).exec();
        } catch (NotFoundException e) {
            client.createVolumeCmd().withName(volume).withLabels(identity).exec();
            plantedVolumes.add(volume);
        }
        Map<String, String> labels = new LinkedHashMap<>(identity);
        labels.put(Labels.GENERATION, "1");
        labels.put(Labels.POLICY_DIGEST, policyDigest);
        String name = "sandgate-probe-" + ref.id().substring(0, 8) + "-"
                + UUID.randomUUID().toString().substring(0, 6);
        String id = client.createContainerCmd(engine.image())
                .withName(name)
                .withLabels(labels)
                .withCmd(TestEngine.SLEEP_FOREVER)
                .withHostConfig(HostConfig.newHostConfig()
                        .withInit(true)
                        .withNetworkMode("none")
                        .withBinds(new Bind(volume, new Volume("/workspace"))))
                .exec()
                .getId();
        plantedContainers.add(id);
        if (start) {
            client.startContainerCmd(id).exec();
        }
        return toResource(client.inspectContainerCmd(id).exec());
    }

    @Override
    public List<BackendResource> resources(String sandboxId) {
        return containers(Map.of(Labels.SANDBOX_ID, sandboxId)).stream()
                .map(DockerJavaBackendProbe::toResource)
                .toList();
    }

    @Override
    public List<BackendResource> resourcesOfGateway(String gatewayId) {
        List<BackendResource> resources = new ArrayList<>();
        for (Container container : containers(Map.of(Labels.GATEWAY_ID, gatewayId))) {
            resources.add(toResource(container));
        }
        for (var volume : volumes(Labels.GATEWAY_ID, gatewayId)) {
            resources.add(new BackendResource("volume/" + volume.getName(), false, labels(volume.getLabels())));
        }
        return resources;
    }

    /** The names of the volumes carrying {@code sandboxId}. */
    public List<String> volumeNames(String sandboxId) {
        return volumes(Labels.SANDBOX_ID, sandboxId).stream()
                .map(volume -> volume.getName())
                .toList();
    }

    @Override
    public void remove(String sandboxId) {
        for (Container container : containers(Map.of(Labels.SANDBOX_ID, sandboxId))) {
            removeContainer(container.getId());
        }
        for (String volume : volumeNames(sandboxId)) {
            removeVolume(volume);
        }
    }

    @Override
    public void writeWorkspaceMarker(SandboxRef ref, String marker) {
        ExecResult result = exec(runningContainer(ref), "sh", "-c", "printf %s \"$1\" > " + MARKER_PATH, "sh", marker);
        if (result.exitCode() != 0) {
            throw new IllegalStateException(
                    "writing the marker failed (" + result.exitCode() + "): " + result.stderr());
        }
    }

    @Override
    public Optional<String> readWorkspaceMarker(SandboxRef ref) {
        ExecResult result = exec(runningContainer(ref), "cat", MARKER_PATH);
        return result.exitCode() == 0 ? Optional.of(result.stdout()) : Optional.empty();
    }

    /** The running container of {@code ref}. */
    public String runningContainer(SandboxRef ref) {
        return containers(Map.of(Labels.SANDBOX_ID, ref.id())).stream()
                .filter(container -> "running".equals(container.getState()))
                .map(Container::getId)
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no running container carries sandbox id " + ref.id()));
    }

    /** What a command run inside a container printed, and its exit code. */
    public record ExecResult(long exitCode, String stdout, String stderr) {}

    /** Runs {@code command} inside the running container {@code containerId} and waits for it to finish. */
    public ExecResult exec(String containerId, String... command) {
        String execId = client.execCreateCmd(containerId)
                .withCmd(command)
                .withAttachStdout(true)
                .withAttachStderr(true)
                .exec()
                .getId();
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        try {
            boolean finished = client.execStartCmd(execId)
                    .exec(new ResultCallback.Adapter<Frame>() {
                        @Override
                        public void onNext(Frame frame) {
                            switch (frame.getStreamType()) {
                                case STDOUT, RAW -> stdout.writeBytes(frame.getPayload());
                                case STDERR -> stderr.writeBytes(frame.getPayload());
                                default -> {}
                            }
                        }
                    })
                    .awaitCompletion(EXEC_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            if (!finished) {
                throw new IllegalStateException("exec " + List.of(command) + " did not finish within " + EXEC_TIMEOUT);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted during exec", e);
        }
        return new ExecResult(
                exitCode(execId), stdout.toString(StandardCharsets.UTF_8), stderr.toString(StandardCharsets.UTF_8));
    }

    private long exitCode(String execId) {
        long deadline = System.nanoTime() + EXEC_TIMEOUT.toNanos();
        long pauseMillis = 5;
        while (true) {
            InspectExecResponse inspect = client.inspectExecCmd(execId).exec();
            if (!Boolean.TRUE.equals(inspect.isRunning()) && inspect.getExitCodeLong() != null) {
                return inspect.getExitCodeLong();
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("exec " + execId + " reported no exit code within " + EXEC_TIMEOUT);
            }
            try {
                TimeUnit.MILLISECONDS.sleep(pauseMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for an exec", e);
            }
            pauseMillis = Math.min(pauseMillis * 2, 200);
        }
    }

    @Override
    public void close() {
        for (String id : plantedContainers) {
            removeContainer(id);
        }
        for (String volume : plantedVolumes) {
            removeVolume(volume);
        }
        try {
            client.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private List<Container> containers(Map<String, String> labels) {
        return client.listContainersCmd().withShowAll(true).withLabelFilter(labels).exec().stream()
                .filter(container -> labels.entrySet().stream()
                        .allMatch(entry -> entry.getValue()
                                .equals(labels(container.getLabels()).get(entry.getKey()))))
                .toList();
    }

    private List<com.github.dockerjava.api.command.InspectVolumeResponse> volumes(String key, String value) {
        var response = client.listVolumesCmd()
                .withFilter("label", List.of(key + "=" + value))
                .exec();
        if (response.getVolumes() == null) {
            return List.of();
        }
        return response.getVolumes().stream()
                .filter(volume -> value.equals(labels(volume.getLabels()).get(key)))
                .toList();
    }

    private void removeContainer(String id) {
        try {
            client.removeContainerCmd(id).withForce(true).exec();
        } catch (NotFoundException e) {
            // Already gone.
        }
    }

    private void removeVolume(String name) {
        try {
            client.removeVolumeCmd(name).exec();
        } catch (NotFoundException e) {
            // Already gone.
        }
    }

    private static BackendResource toResource(Container container) {
        return new BackendResource(
                container.getId(), "running".equals(container.getState()), labels(container.getLabels()));
    }

    private static BackendResource toResource(InspectContainerResponse inspect) {
        return new BackendResource(
                inspect.getId(),
                inspect.getState() != null
                        && Boolean.TRUE.equals(inspect.getState().getRunning()),
                labels(inspect.getConfig().getLabels()));
    }

    private static Map<String, String> labels(Map<String, String> labels) {
        return labels == null ? Map.of() : labels;
    }
}
