package dev.sandgate.driver.container.testing;

import static java.util.Objects.requireNonNull;
import static org.awaitility.Awaitility.await;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.Volume;
import dev.sandgate.conformance.AppliedPolicy;
import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.BackendResource;
import dev.sandgate.driver.container.ContainerNaming;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StaticPolicy;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A {@link BackendProbe} for the container drivers, on docker-java directly (never through the driver): a sandbox is
 * its containers (one per execution) and its workspace volume, found by their labels.
 *
 * <p>{@link #resources} lists containers, the runtime resources that carry an execution; {@link #resourcesOfGateway}
 * lists containers and volumes (a volume's backend id is {@code volume/<name>}), so that a leaked volume is caught.
 * {@link #appliedPolicy} reads the current container's {@code HostConfig} as the engine reports it (see {@link
 * #appliedStaticPolicy} for how each engine's spelling is read).
 */
public final class DockerJavaBackendProbe implements BackendProbe {
    /** Where {@link #writeWorkspaceMarker} writes, inside the workspace volume. */
    public static final String MARKER_PATH = "/workspace/.sandgate-kit-marker";

    private static final Duration EXEC_TIMEOUT = Duration.ofSeconds(60);

    /**
     * The capabilities a container that is not privileged starts from on Docker, and the set Podman 4.3's
     * Docker-compatible inspect compares the container's bounding set with to report {@code CapDrop} and {@code
     * CapAdd} (the OCI runtime-tools default, whatever containers.conf grants). Later Podman releases compare with
     * containers.conf's {@code default_capabilities} instead; {@code
     * ContainerEngineDriverTest#theProbeReportsWhatTheKernelAppliesToTheContainer} checks this reading against the
     * kernel on each engine.
     */
    static final Set<String> ENGINE_DEFAULT_CAPABILITIES = Set.of(
            "AUDIT_WRITE",
            "CHOWN",
            "DAC_OVERRIDE",
            "FOWNER",
            "FSETID",
            "KILL",
            "MKNOD",
            "NET_BIND_SERVICE",
            "NET_RAW",
            "SETFCAP",
            "SETGID",
            "SETPCAP",
            "SETUID",
            "SYS_CHROOT");

    /** Every capability docker-java can name (and so every capability the drivers can be asked to drop). */
    static final Set<String> KNOWN_CAPABILITIES = Arrays.stream(Capability.values())
            .filter(capability -> capability != Capability.ALL)
            .map(Capability::name)
            .collect(Collectors.toUnmodifiableSet());

    /** The CFS period the kernel uses when the engine sets a CPU quota without one ({@code CpuPeriod: 0}). */
    static final long DEFAULT_CPU_PERIOD_MICROS = 100_000;

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

    /** Like {@link #plant}, then stopped as the driver stops a container (the engine's stop, an orderly exit). */
    @Override
    public BackendResource plantStopped(SandboxRef ref, String gatewayId, String policyDigest) {
        String id = plant(ref, gatewayId, policyDigest, true).backendId();
        client.stopContainerCmd(id).withTimeout(10).exec();
        return toResource(client.inspectContainerCmd(id).exec());
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
        // The name the driver gives the first container of generation 1, or of its relaunch if that one exists.
        String name = ContainerNaming.containerName(ref, 1, 1);
        for (int attempt = 2; containerExists(name); attempt++) {
            name = ContainerNaming.containerName(ref, 1, attempt);
        }
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

    private boolean containerExists(String name) {
        try {
            client.inspectContainerCmd(name).exec();
            return true;
        } catch (NotFoundException e) {
            return false;
        }
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

    /**
     * Reads the restrictions of {@code ref}'s current container from the engine's inspect output (its {@code
     * HostConfig}), never from the driver.
     *
     * @throws IllegalStateException if no container carries the id, or the engine reports a setting this probe cannot
     *     read
     */
    @Override
    public AppliedPolicy appliedPolicy(SandboxRef ref) {
        InspectContainerResponse current = currentContainer(ref);
        if (current.getHostConfig() == null) {
            throw new IllegalStateException("the engine reports no HostConfig for container " + current.getId());
        }
        // These drivers enforce no network allow-list: none is in force.
        return AppliedPolicy.of(appliedStaticPolicy(current.getHostConfig()));
    }

    /**
     * The variables of {@code ref}'s current container as the engine reports its {@code Config.Env}: the image's
     * variables and the engine's own with the container's (each {@code NAME=value}, split at the first {@code =}).
     */
    @Override
    public Map<String, String> launchedEnvironment(SandboxRef ref) {
        InspectContainerResponse current = currentContainer(ref);
        if (current.getConfig() == null) {
            throw new IllegalStateException("the engine reports no Config for container " + current.getId());
        }
        var environment = new TreeMap<String, String>();
        for (String entry : Optional.ofNullable(current.getConfig().getEnv()).orElse(new String[0])) {
            int equals = entry.indexOf('=');
            // A name without "=" unsets the variable (moby's ReplaceOrAppendEnvValues): the program does not get it.
            if (equals > 0) {
                environment.put(entry.substring(0, equals), entry.substring(equals + 1));
            }
        }
        return environment;
    }

    /**
     * The container of {@code ref}'s current execution, inspected: of the containers carrying its sandbox id, the one
     * of the highest generation stamped, the newest if several share it.
     */
    public InspectContainerResponse currentContainer(SandboxRef ref) {
        List<InspectContainerResponse> inspected = new ArrayList<>();
        for (Container container : containers(Map.of(Labels.SANDBOX_ID, ref.id()))) {
            try {
                inspected.add(client.inspectContainerCmd(container.getId()).exec());
            } catch (NotFoundException e) {
                // Removed since the list: not the current one.
            }
        }
        return inspected.stream()
                .max(Comparator.comparingLong(DockerJavaBackendProbe::generation)
                        .thenComparing(DockerJavaBackendProbe::created))
                .orElseThrow(() -> new IllegalStateException("no container carries sandbox id " + ref.id()));
    }

    /**
     * The restrictions a container runs with, read from its {@code HostConfig} as Docker and Podman report it; what
     * the container does not restrict is unrestricted ({@code false}, empty, {@code 0}, {@link NetworkMode#DEFAULT}).
     *
     * <ul>
     *   <li>{@code ReadonlyRootfs}; {@code NetworkMode} {@code none} is {@link NetworkMode#NONE}, any other (a
     *       network, {@code default}, {@code bridge}, {@code host}, another container's) is {@link
     *       NetworkMode#DEFAULT}.
     *   <li>Capabilities: Docker reports {@code CapDrop} and {@code CapAdd} as they were asked; Podman reports the
     *       difference between the container's bounding set and {@link #ENGINE_DEFAULT_CAPABILITIES} (so a
     *       capability outside that set, such as {@code SYS_ADMIN}, never appears in its {@code CapDrop}, and {@code
     *       ALL} appears as the list of that set). Both mean the bounding set is that set minus {@code CapDrop} (nothing
     *       if it holds {@code ALL}) plus {@code CapAdd}; every other capability is dropped, and {@code ALL} when
     *       nothing is left. A privileged container is reported dropping nothing. (docker-java reads each name
     *       without its {@code CAP_} prefix; a name it does not know, or in lower case, which Docker keeps as it was
     *       asked, makes the inspect itself fail.)
     *   <li>{@code SecurityOpt}: {@code no-new-privileges}, or with {@code :} or {@code =} and a boolean (Docker keeps
     *       what it was given; Podman reports {@code no-new-privileges}, or nothing).
     *   <li>{@code Memory} in bytes; {@code PidsLimit} ({@code 0} and {@code -1} are no limit; Podman reports its
     *       default of 2048 when none was asked).
     *   <li>CPU: {@code NanoCpus} (Docker reports only that), or {@code CpuQuota} over {@code CpuPeriod} (Podman
     *       reports both beside {@code NanoCpus}; a period of 0 is the kernel's 100 ms), in millicores rounded up;
     *       where both are set, the looser.
     * </ul>
     *
     * @throws IllegalStateException naming the field, for a value this probe cannot read
     */
    static StaticPolicy appliedStaticPolicy(HostConfig hostConfig) {
        return new StaticPolicy(
                Boolean.TRUE.equals(hostConfig.getReadonlyRootfs()),
                "none".equals(hostConfig.getNetworkMode()) ? NetworkMode.NONE : NetworkMode.DEFAULT,
                droppedCapabilities(hostConfig),
                noNewPrivileges(hostConfig.getSecurityOpts()),
                memoryLimit(hostConfig.getMemory()),
                cpuLimitMillis(hostConfig),
                pidsLimit(hostConfig.getPidsLimit()));
    }

    private static Set<String> droppedCapabilities(HostConfig hostConfig) {
        Set<String> drop = capabilityNames(hostConfig.getCapDrop(), "CapDrop");
        Set<String> add = capabilityNames(hostConfig.getCapAdd(), "CapAdd");
        if (Boolean.TRUE.equals(hostConfig.getPrivileged()) || add.contains("ALL")) {
            return Set.of();
        }
        Set<String> bounding = new TreeSet<>();
        if (!drop.contains("ALL")) {
            bounding.addAll(ENGINE_DEFAULT_CAPABILITIES);
            bounding.removeAll(drop);
        }
        bounding.addAll(add);
        if (bounding.isEmpty()) {
            return Set.of("ALL");
        }
        Set<String> dropped = new TreeSet<>(KNOWN_CAPABILITIES);
        dropped.removeAll(bounding);
        return dropped;
    }

    private static Set<String> capabilityNames(Capability[] capabilities, String field) {
        Set<String> names = new TreeSet<>();
        if (capabilities == null) {
            return names;
        }
        for (Capability capability : capabilities) {
            if (capability == null) {
                throw new IllegalStateException("HostConfig." + field + " holds a capability docker-java cannot name: "
                        + Arrays.toString(capabilities));
            }
            // docker-java reads "CAP_NET_RAW" and "NET_RAW" alike: the constant's name is the normalised one.
            names.add(capability.name());
        }
        return names;
    }

    private static boolean noNewPrivileges(List<String> securityOptions) {
        Boolean noNewPrivileges = null;
        for (String option : securityOptions == null ? List.<String>of() : securityOptions) {
            if (option == null || !option.startsWith("no-new-privileges")) {
                continue; // seccomp=, apparmor=, label=: not a policy field
            }
            String rest = option.substring("no-new-privileges".length());
            boolean value;
            if (rest.isEmpty()) {
                value = true;
            } else if ((rest.startsWith(":") || rest.startsWith("=")) && isBoolean(rest.substring(1))) {
                value = Boolean.parseBoolean(rest.substring(1));
            } else {
                throw new IllegalStateException("HostConfig.SecurityOpt holds '" + option
                        + "', which this probe cannot read (expected no-new-privileges, optionally with :true,"
                        + " =true, :false or =false)");
            }
            if (noNewPrivileges != null && noNewPrivileges != value) {
                throw new IllegalStateException(
                        "HostConfig.SecurityOpt holds contradictory no-new-privileges options: " + securityOptions);
            }
            noNewPrivileges = value;
        }
        return Boolean.TRUE.equals(noNewPrivileges);
    }

    private static boolean isBoolean(String text) {
        return text.equalsIgnoreCase("true") || text.equalsIgnoreCase("false");
    }

    private static long memoryLimit(Long memory) {
        if (memory == null || memory == 0) {
            return 0;
        }
        if (memory < 0) {
            throw new IllegalStateException("HostConfig.Memory is " + memory + ", which this probe cannot read");
        }
        return memory;
    }

    private static long pidsLimit(Long pidsLimit) {
        if (pidsLimit == null || pidsLimit == 0 || pidsLimit == -1) {
            return 0;
        }
        if (pidsLimit < 0) {
            throw new IllegalStateException("HostConfig.PidsLimit is " + pidsLimit + ", which this probe cannot read");
        }
        return pidsLimit;
    }

    private static long cpuLimitMillis(HostConfig hostConfig) {
        long nanoCpus = hostConfig.getNanoCPUs() == null ? 0 : hostConfig.getNanoCPUs();
        long quota = hostConfig.getCpuQuota() == null ? 0 : hostConfig.getCpuQuota();
        long period = hostConfig.getCpuPeriod() == null ? 0 : hostConfig.getCpuPeriod();
        if (nanoCpus < 0) {
            throw new IllegalStateException("HostConfig.NanoCpus is " + nanoCpus + ", which this probe cannot read");
        }
        if (quota < -1) {
            throw new IllegalStateException("HostConfig.CpuQuota is " + quota + ", which this probe cannot read");
        }
        if (period < 0) {
            throw new IllegalStateException("HostConfig.CpuPeriod is " + period + ", which this probe cannot read");
        }
        long fromNanoCpus = Math.ceilDiv(nanoCpus, 1_000_000);
        long fromQuota = quota > 0
                ? Math.ceilDiv(Math.multiplyExact(quota, 1000), period > 0 ? period : DEFAULT_CPU_PERIOD_MICROS)
                : 0;
        // Each is 0 when unset; where both are set (Podman), the looser one, so as never to report more than applied.
        return Math.max(fromNanoCpus, fromQuota);
    }

    private static long generation(InspectContainerResponse inspect) {
        String generation = labels(
                        inspect.getConfig() == null ? null : inspect.getConfig().getLabels())
                .get(Labels.GENERATION);
        if (generation == null) {
            return 0;
        }
        try {
            return Long.parseLong(generation);
        } catch (NumberFormatException e) {
            throw new IllegalStateException(
                    "container " + inspect.getId() + " carries a malformed generation '" + generation + "'");
        }
    }

    private static Instant created(InspectContainerResponse inspect) {
        try {
            return OffsetDateTime.parse(String.valueOf(inspect.getCreated())).toInstant();
        } catch (DateTimeParseException e) {
            throw new IllegalStateException("container " + inspect.getId() + " reports an unreadable creation time '"
                    + inspect.getCreated() + "'");
        }
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
        return await("the exit code of exec " + execId)
                .atMost(EXEC_TIMEOUT)
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(20))
                .until(
                        () -> client.inspectExecCmd(execId).exec(),
                        inspect -> !Boolean.TRUE.equals(inspect.isRunning()) && inspect.getExitCodeLong() != null)
                .getExitCodeLong();
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
