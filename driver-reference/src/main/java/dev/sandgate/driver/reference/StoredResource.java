package dev.sandgate.driver.reference;

import static java.util.Objects.requireNonNull;

import java.util.Map;
import java.util.TreeMap;

/**
 * One runtime resource of the {@link DirectoryBackend}: what a container is to Docker. It lives in the folder {@code
 * <root>/<gatewayId>/sandboxes/<key>/}; the reference driver always uses the sandbox id as the key.
 *
 * @param gatewayId the gateway folder it lives in
 * @param key the folder name within the gateway's {@code sandboxes/} folder
 * @param backendId a random id given when the resource was inserted; it never changes, and a resource inserted again
 *     under the same key gets a new one (a new incarnation)
 * @param state whether its simulated execution runs
 * @param labels its stamps: the managed labels of {@link dev.sandgate.spi.Labels} and the user labels, in one map
 * @param settings the launch settings its current execution runs with (see {@link LaunchSettings}): what a
 *     container's host config is to Docker
 */
public record StoredResource(
        String gatewayId,
        String key,
        String backendId,
        StoredResource.State state,
        Map<String, String> labels,
        Map<String, String> settings) {
    /** The simulated execution's state. */
    public enum State {
        RUNNING,
        STOPPED
    }

    public StoredResource {
        DirectoryBackend.requireSegment("gatewayId", gatewayId);
        DirectoryBackend.requireSegment("key", key);
        requireNonNull(backendId, "backendId is null");
        requireNonNull(state, "state is null");
        labels = Map.copyOf(requireNonNull(labels, "labels is null"));
        settings = Map.copyOf(requireNonNull(settings, "settings is null"));
    }

    /** A resource without launch settings: one that runs unrestricted. */
    public StoredResource(String gatewayId, String key, String backendId, State state, Map<String, String> labels) {
        this(gatewayId, key, backendId, state, labels, Map.of());
    }

    public String label(String name) {
        return labels.get(name);
    }

    public boolean running() {
        return state == State.RUNNING;
    }

    public StoredResource withState(State newState) {
        return new StoredResource(gatewayId, key, backendId, newState, labels, settings);
    }

    /** A copy whose labels are these plus {@code changes} (which win). */
    public StoredResource withLabels(Map<String, String> changes) {
        var merged = new TreeMap<>(labels);
        merged.putAll(changes);
        return new StoredResource(gatewayId, key, backendId, state, merged, settings);
    }

    /** A copy whose launch settings are {@code newSettings}, for a new execution. */
    public StoredResource withSettings(Map<String, String> newSettings) {
        return new StoredResource(gatewayId, key, backendId, state, labels, newSettings);
    }
}
