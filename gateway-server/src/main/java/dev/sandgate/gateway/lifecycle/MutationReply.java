package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.store.PolicyRevisionRecord;
import dev.sandgate.gateway.store.SandboxRecord;
import java.util.Optional;

/**
 * The result of a mutating request.
 *
 * @param outcome what the request did
 * @param sandboxId the sandbox it acted on (empty when nothing was found)
 * @param generation the execution generation the outcome refers to
 * @param sandbox the sandbox as it is now, looked up by id (empty if it no longer exists)
 * @param revision for policy updates, the admitted revision
 * @param replayed whether this answer replays an earlier request with the same request id
 */
public record MutationReply(
        Outcome outcome,
        Optional<String> sandboxId,
        long generation,
        Optional<SandboxRecord> sandbox,
        Optional<PolicyRevisionRecord> revision,
        boolean replayed) {
    public MutationReply {
        requireNonNull(outcome, "outcome is null");
        requireNonNull(sandboxId, "sandboxId is null");
        requireNonNull(sandbox, "sandbox is null");
        requireNonNull(revision, "revision is null");
    }

    public MutationReply asReplay() {
        return new MutationReply(outcome, sandboxId, generation, sandbox, revision, true);
    }
}
