package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.store.SandboxRecord;

/**
 * One change streamed to watchers.
 *
 * @param type what happened
 * @param sandbox the sandbox after the change (for REMOVED, its last state)
 * @param observation the observation that caused it; for the gateway's own transitions, the current execution
 * @param stateChanged whether the stored sandbox changed (false for observations of older executions and platform
 *     events, which are streamed but change nothing)
 */
public record SandboxChange(Type type, SandboxRecord sandbox, Observation observation, boolean stateChanged) {
    public enum Type {
        ADDED,
        MODIFIED,
        REMOVED,
        PLATFORM
    }

    public SandboxChange {
        requireNonNull(type, "type is null");
        requireNonNull(sandbox, "sandbox is null");
        requireNonNull(observation, "observation is null");
    }
}
