package dev.sandgate.gateway.store;

import java.util.Optional;

/**
 * The recorded result of a mutating request.
 *
 * @param outcome what happened, in the method's own words ({@code STOPPED_NOW}, {@code LAUNCHED}, ...); empty for an
 *     error
 * @param sandboxId the sandbox the request acted on, or empty
 * @param generation the execution generation the result refers to
 * @param policyRevision for policy updates, the admitted revision
 * @param error the error the request ended with, if it failed
 */
public record RequestResult(
        String outcome, Optional<String> sandboxId, long generation, long policyRevision, Optional<ErrorRecord> error) {
    public static RequestResult success(String outcome, String sandboxId, long generation, long policyRevision) {
        return new RequestResult(outcome, Optional.ofNullable(sandboxId), generation, policyRevision, Optional.empty());
    }

    public static RequestResult failure(ErrorRecord error, Optional<String> sandboxId, long generation) {
        return new RequestResult("", sandboxId, generation, 0, Optional.of(error));
    }
}
