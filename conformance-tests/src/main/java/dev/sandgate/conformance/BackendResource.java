package dev.sandgate.conformance;

import static java.util.Objects.requireNonNull;

import java.util.Map;

/**
 * One runtime resource as the backend itself reports it, read out of band by a {@link BackendProbe}.
 *
 * @param backendId the immutable backend identifier (container ID, Kubernetes UID, VM process identity); a replaced
 *     resource has a new one
 * @param running whether the backend reports the resource's execution as running
 * @param stamps the resource's labels and stamps: the managed keys of {@link dev.sandgate.spi.Labels} (for backends
 *     that keep some of them elsewhere, such as Kubernetes annotations, the probe merges them in under the same keys)
 *     and the user labels
 */
public record BackendResource(String backendId, boolean running, Map<String, String> stamps) {
    public BackendResource {
        requireNonNull(backendId, "backendId is null");
        stamps = Map.copyOf(requireNonNull(stamps, "stamps is null"));
    }

    public String stamp(String key) {
        return stamps.get(key);
    }
}
