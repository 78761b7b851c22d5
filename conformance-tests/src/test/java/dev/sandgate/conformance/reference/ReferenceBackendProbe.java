package dev.sandgate.conformance.reference;

import static java.util.Objects.requireNonNull;

import dev.sandgate.conformance.AppliedPolicy;
import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.BackendResource;
import dev.sandgate.driver.reference.DirectoryBackend;
import dev.sandgate.driver.reference.LaunchSettings;
import dev.sandgate.driver.reference.StoredResource;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.SandboxRef;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The kit's out-of-band access to the reference driver's directory: it uses {@link DirectoryBackend} (the "engine"),
 * never the driver. It finds resources by their stamps, wherever they are stored, as a label query would.
 */
public final class ReferenceBackendProbe implements BackendProbe {
    private static final String MARKER_FILE = "kit-marker";

    private final DirectoryBackend backend;
    private final Set<StoredResource> planted = ConcurrentHashMap.newKeySet();

    public ReferenceBackendProbe(Path directory) {
        this.backend = new DirectoryBackend(requireNonNull(directory, "directory is null"));
    }

    @Override
    public BackendResource plant(SandboxRef ref, String gatewayId, String policyDigest) {
        return plant(ref, gatewayId, policyDigest, StoredResource.State.RUNNING);
    }

    @Override
    public BackendResource plantStopped(SandboxRef ref, String gatewayId, String policyDigest) {
        return plant(ref, gatewayId, policyDigest, StoredResource.State.STOPPED);
    }

    /** Stored under its id, as the driver stores a sandbox (the reference driver derives no name from the ref). */
    private BackendResource plant(SandboxRef ref, String gatewayId, String policyDigest, StoredResource.State state) {
        var resource = new StoredResource(
                gatewayId,
                ref.id(),
                UUID.randomUUID().toString(),
                state,
                Map.of(
                        Labels.MANAGED_BY,
                        Labels.MANAGED_BY_VALUE,
                        Labels.GATEWAY_ID,
                        gatewayId,
                        Labels.SANDBOX_ID,
                        ref.id(),
                        Labels.WORKSPACE,
                        ref.workspace(),
                        Labels.NAME,
                        ref.name(),
                        Labels.GENERATION,
                        "1",
                        Labels.POLICY_DIGEST,
                        policyDigest));
        backend.locked(gatewayId, ref.id(), () -> {
            backend.insert(resource, Map.of("image", "planted-by-the-kit"));
            return null;
        });
        planted.add(resource);
        return toBackendResource(resource);
    }

    @Override
    public List<BackendResource> resources(String sandboxId) {
        return backend.listAll().stream()
                .filter(resource -> sandboxId.equals(resource.label(Labels.SANDBOX_ID)))
                .map(ReferenceBackendProbe::toBackendResource)
                .toList();
    }

    @Override
    public List<BackendResource> resourcesOfGateway(String gatewayId) {
        return backend.listAll().stream()
                .filter(resource -> gatewayId.equals(resource.label(Labels.GATEWAY_ID)))
                .map(ReferenceBackendProbe::toBackendResource)
                .toList();
    }

    @Override
    public void remove(String sandboxId) {
        for (StoredResource resource : backend.listAll()) {
            if (sandboxId.equals(resource.label(Labels.SANDBOX_ID))) {
                backend.locked(
                        resource.gatewayId(),
                        resource.key(),
                        () -> backend.remove(resource.gatewayId(), resource.key()));
            }
        }
    }

    @Override
    public void writeWorkspaceMarker(SandboxRef ref, String marker) {
        Path workspace = runningWorkspace(ref);
        Path temporary = workspace.resolve("." + MARKER_FILE + "-" + UUID.randomUUID());
        try {
            Files.writeString(temporary, marker, StandardCharsets.UTF_8);
            Files.move(temporary, workspace.resolve(MARKER_FILE), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public Optional<String> readWorkspaceMarker(SandboxRef ref) {
        try {
            return Optional.of(Files.readString(runningWorkspace(ref).resolve(MARKER_FILE), StandardCharsets.UTF_8));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public AppliedPolicy appliedPolicy(SandboxRef ref) {
        StoredResource resource = resourceOf(ref);
        return new AppliedPolicy(
                LaunchSettings.staticPolicy(resource.settings()), LaunchSettings.dynamicPolicy(resource.settings()));
    }

    /** The {@code env.} entries of the resource's {@code spec.properties}, which each launch runs with. */
    @Override
    public Map<String, String> launchedEnvironment(SandboxRef ref) {
        StoredResource resource = resourceOf(ref);
        var environment = new TreeMap<String, String>();
        backend.readSpec(resource.gatewayId(), resource.key()).forEach((key, value) -> {
            if (key.startsWith("env.")) {
                environment.put(key.substring("env.".length()), value);
            }
        });
        return environment;
    }

    @Override
    public void close() {
        for (StoredResource resource : planted) {
            backend.locked(resource.gatewayId(), resource.key(), () -> {
                Optional<StoredResource> now = backend.read(resource.gatewayId(), resource.key());
                if (now.isPresent() && now.get().backendId().equals(resource.backendId())) {
                    backend.remove(resource.gatewayId(), resource.key());
                }
                return null;
            });
        }
        planted.clear();
    }

    /** Like exec into a container: only a running sandbox's workspace can be reached. */
    private Path runningWorkspace(SandboxRef ref) {
        StoredResource resource = resourceOf(ref);
        if (!resource.running()) {
            throw new IllegalStateException("sandbox " + ref.id() + " is not running");
        }
        return backend.workspace(resource.gatewayId(), resource.key());
    }

    private StoredResource resourceOf(SandboxRef ref) {
        return backend.listAll().stream()
                .filter(candidate -> ref.id().equals(candidate.label(Labels.SANDBOX_ID)))
                .filter(candidate -> candidate.key().equals(ref.id()))
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("no resource carries sandbox id " + ref.id()));
    }

    private static BackendResource toBackendResource(StoredResource resource) {
        return new BackendResource(resource.backendId(), resource.running(), resource.labels());
    }
}
