package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

import java.util.Map;

/**
 * What a driver observed of one sandbox's runtime resource.
 *
 * @param ref the identity read from the resource's stamps (id, workspace, name)
 * @param generation the execution generation stamped on the resource
 * @param state the execution's state
 * @param policyDigest the digest of the launch policy stamped on the resource
 * @param labels the user labels on the resource (managed labels removed)
 * @param detail a short human-readable detail (exit code, backend reason); empty if none; never secrets
 */
public record SandboxObservation(
        SandboxRef ref,
        long generation,
        SandboxState state,
        String policyDigest,
        Map<String, String> labels,
        String detail) {
    public SandboxObservation {
        requireNonNull(ref, "ref is null");
        if (generation < 1) {
            throw DriverException.invalidArgument("observation.generation", "must be at least 1");
        }
        requireNonNull(state, "state is null");
        requireNonNull(policyDigest, "policyDigest is null");
        labels = Map.copyOf(requireNonNull(labels, "labels is null"));
        requireNonNull(detail, "detail is null");
    }
}
