package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Which sandboxes a list or watch wants.
 *
 * @param workspace only this workspace, if present
 * @param labels only sandboxes carrying all of these labels
 * @param phases only these phases; empty means all
 */
public record SandboxFilter(Optional<String> workspace, Map<String, String> labels, Set<SandboxPhase> phases) {
    public static final SandboxFilter ALL = new SandboxFilter(Optional.empty(), Map.of(), Set.of());

    public SandboxFilter {
        requireNonNull(workspace, "workspace is null");
        labels = Map.copyOf(requireNonNull(labels, "labels is null"));
        phases = Set.copyOf(requireNonNull(phases, "phases is null"));
    }

    public boolean matches(SandboxRecord sandbox) {
        return matches(sandbox, sandbox.phase());
    }

    /** Whether the sandbox matches, judged as if it were in {@code phase}. */
    public boolean matches(SandboxRecord sandbox, SandboxPhase phase) {
        if (workspace.isPresent() && !workspace.get().equals(sandbox.workspace())) {
            return false;
        }
        if (!phases.isEmpty() && !phases.contains(phase)) {
            return false;
        }
        for (Map.Entry<String, String> label : labels.entrySet()) {
            if (!label.getValue().equals(sandbox.labels().get(label.getKey()))) {
                return false;
            }
        }
        return true;
    }
}
