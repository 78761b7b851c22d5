package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import java.time.Instant;

/**
 * What the reconciler compares with the driver's observations, read without the columns it never looks at: a sandbox's
 * identity, phase, generations, runtime state, whether a transition is pending and whether its runtime resource was
 * found missing. Reading these instead of whole {@link SandboxRecord}s spares decoding the spec, labels and conditions
 * of every stored sandbox when nothing changed.
 *
 * @param pending whether a transition is pending
 * @param runtimeMissing whether the sandbox carries the {@link ConditionRecord#RUNTIME_MISSING} condition
 */
public record RuntimeState(
        String id,
        String workspace,
        String name,
        SandboxPhase phase,
        long generation,
        long runtimeGeneration,
        String runtimeState,
        String runtimeDetail,
        boolean pending,
        boolean runtimeMissing,
        Instant updateTime) {
    public RuntimeState {
        requireNonNull(id, "id is null");
        requireNonNull(workspace, "workspace is null");
        requireNonNull(name, "name is null");
        requireNonNull(phase, "phase is null");
        requireNonNull(runtimeState, "runtimeState is null");
        requireNonNull(runtimeDetail, "runtimeDetail is null");
        requireNonNull(updateTime, "updateTime is null");
    }

    /** The same view of a whole record. */
    public static RuntimeState of(SandboxRecord row) {
        return new RuntimeState(
                row.id(),
                row.workspace(),
                row.name(),
                row.phase(),
                row.generation(),
                row.runtimeGeneration(),
                row.runtimeState(),
                row.runtimeDetail(),
                row.pending().isPresent(),
                row.conditions().stream().anyMatch(c -> c.type().equals(ConditionRecord.RUNTIME_MISSING)),
                row.updateTime());
    }
}
