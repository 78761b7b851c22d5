package dev.sandgate.conformance;

import dev.sandgate.spi.Labels;

/**
 * What the kit compares to decide that a runtime resource was not touched: its incarnation, whether it runs, and its
 * identity and execution stamps.
 */
record ResourceFacts(
        String backendId,
        boolean running,
        String sandboxId,
        String workspace,
        String name,
        String generation,
        String policyDigest) {
    static ResourceFacts of(BackendResource resource) {
        return new ResourceFacts(
                resource.backendId(),
                resource.running(),
                resource.stamp(Labels.SANDBOX_ID),
                resource.stamp(Labels.WORKSPACE),
                resource.stamp(Labels.NAME),
                resource.stamp(Labels.GENERATION),
                resource.stamp(Labels.POLICY_DIGEST));
    }
}
