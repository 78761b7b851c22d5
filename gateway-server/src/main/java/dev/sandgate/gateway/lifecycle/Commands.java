package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.policy.PolicyDocument;
import dev.sandgate.gateway.store.ExpiryRecord;
import dev.sandgate.gateway.store.PolicyMode;
import dev.sandgate.gateway.store.StoredSpec;
import java.util.Map;
import java.util.Optional;

/** The validated inputs of lifecycle operations, built by the API mapper from requests. */
public final class Commands {
    private Commands() {}

    /**
     * Names a sandbox: by id, by workspace and name, or both (then the id is authoritative and the name must match).
     */
    public record Target(Optional<String> id, Optional<String> workspace, Optional<String> name) {
        public Target {
            requireNonNull(id, "id is null");
            requireNonNull(workspace, "workspace is null");
            requireNonNull(name, "name is null");
            if (workspace.isPresent() != name.isPresent()) {
                throw new IllegalArgumentException("workspace and name go together");
            }
            if (id.isEmpty() && workspace.isEmpty()) {
                throw new IllegalArgumentException("a target needs an id or a workspace and name");
            }
        }

        public static Target byId(String id) {
            return new Target(Optional.of(id), Optional.empty(), Optional.empty());
        }

        public static Target byName(String workspace, String name) {
            return new Target(Optional.empty(), Optional.of(workspace), Optional.of(name));
        }

        @Override
        public String toString() {
            return id.orElse("") + (workspace.isPresent() ? " " + workspace.get() + "/" + name.get() : "");
        }
    }

    /** A condition on the target of a stop or delete; at least one part is present. */
    public record Precondition(Optional<String> expectedSandboxId, Optional<String> expectedToken) {
        public Precondition {
            requireNonNull(expectedSandboxId, "expectedSandboxId is null");
            requireNonNull(expectedToken, "expectedToken is null");
            if (expectedSandboxId.isEmpty() && expectedToken.isEmpty()) {
                throw new IllegalArgumentException("an empty precondition is not a precondition");
            }
        }

        @Override
        public String toString() {
            return "Precondition[expectedSandboxId=" + expectedSandboxId.orElse("") + ", expectedToken="
                    + (expectedToken.isPresent() ? "(present)" : "") + "]";
        }
    }

    /**
     * The idempotency part of a mutating request.
     *
     * @param requestId the client's request id, if given
     * @param fingerprint a digest of the request's content without the request id
     * @param principal who makes the request ({@code ""}: anonymous); a request id is bound to the first
     */
    public record RequestMeta(Optional<String> requestId, String fingerprint, String principal) {
        public RequestMeta {
            requireNonNull(requestId, "requestId is null");
            requireNonNull(fingerprint, "fingerprint is null");
            requireNonNull(principal, "principal is null");
        }

        /** The meta of an anonymous request (a gateway without authentication). */
        public RequestMeta(Optional<String> requestId, String fingerprint) {
            this(requestId, fingerprint, "");
        }
    }

    public record Create(
            RequestMeta meta,
            String workspace,
            String name,
            StoredSpec spec,
            Map<String, String> labels,
            PolicyDocument policy,
            PolicyMode mode,
            boolean waitUntilReady,
            Optional<ExpiryRecord> expiry) {
        public Create {
            requireNonNull(meta, "meta is null");
            requireNonNull(workspace, "workspace is null");
            requireNonNull(name, "name is null");
            requireNonNull(spec, "spec is null");
            labels = Map.copyOf(requireNonNull(labels, "labels is null"));
            requireNonNull(policy, "policy is null");
            requireNonNull(mode, "mode is null");
            requireNonNull(expiry, "expiry is null");
        }

        /** A create of a sandbox that never expires. */
        public Create(
                RequestMeta meta,
                String workspace,
                String name,
                StoredSpec spec,
                Map<String, String> labels,
                PolicyDocument policy,
                PolicyMode mode,
                boolean waitUntilReady) {
            this(meta, workspace, name, spec, labels, policy, mode, waitUntilReady, Optional.empty());
        }
    }

    /** A renewal of the lease of the execution {@code executionToken} names (required: a well-formed token). */
    public record RenewLease(RequestMeta meta, Target target, String executionToken) {
        public RenewLease {
            requireNonNull(meta, "meta is null");
            requireNonNull(target, "target is null");
            requireNonNull(executionToken, "executionToken is null");
        }

        @Override
        public String toString() {
            return "RenewLease[target=" + target + ", executionToken=(present)]";
        }
    }

    public record Stop(RequestMeta meta, Target target, Optional<Precondition> precondition) {
        public Stop {
            requireNonNull(meta, "meta is null");
            requireNonNull(target, "target is null");
            requireNonNull(precondition, "precondition is null");
        }
    }

    public record Start(RequestMeta meta, Target target, boolean waitUntilReady) {
        public Start {
            requireNonNull(meta, "meta is null");
            requireNonNull(target, "target is null");
        }
    }

    public record Delete(RequestMeta meta, Target target, Optional<Precondition> precondition, boolean allowMissing) {
        public Delete {
            requireNonNull(meta, "meta is null");
            requireNonNull(target, "target is null");
            requireNonNull(precondition, "precondition is null");
        }
    }

    public record UpdatePolicy(RequestMeta meta, Target target, PolicyDocument policy, long expectedRevision) {
        public UpdatePolicy {
            requireNonNull(meta, "meta is null");
            requireNonNull(target, "target is null");
            requireNonNull(policy, "policy is null");
        }
    }
}
