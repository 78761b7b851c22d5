package dev.sandgate.gateway.security;

import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.gateway.api.ApiMethod;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Decides, before the service sees a request, whether its principal may make it: the role the method needs
 * ({@link Role#required}) in the workspace the request names, or, for a sandbox named only by id, in the workspace the
 * sandbox is in. An id that names no sandbox is refused like one in another workspace (unless the principal has the
 * role everywhere, or made this very request before: a retry after the sandbox was deleted), so a refusal never tells
 * whether a sandbox exists.
 */
final class Authorizer {
    /** The workspace of a sandbox, if the id names one. */
    @FunctionalInterface
    interface Workspaces {
        Optional<String> of(String sandboxId);
    }

    /** Whether this principal (by {@link Principal#ledgerName()}) recorded this request id. */
    @FunctionalInterface
    interface Requests {
        boolean recordedBy(String requestId, String principal);
    }

    /** The verdict on one request: refused (with the reason for the audit log), or allowed with the request to pass. */
    record Decision(Object request, Optional<String> refusal) {
        static Decision allow(Object request) {
            return new Decision(request, Optional.empty());
        }

        static Decision deny(String why) {
            return new Decision(null, Optional.of(why));
        }
    }

    private final Supplier<AccessPolicy> policy;
    private final Workspaces workspaces;
    private final Requests requests;

    Authorizer(Supplier<AccessPolicy> policy, Workspaces workspaces, Requests requests) {
        this.policy = policy;
        this.workspaces = workspaces;
        this.requests = requests;
    }

    AccessPolicy policy() {
        return policy.get();
    }

    Decision decide(Principal principal, String method, Object request) {
        AccessPolicy current = policy.get();
        Role needed = Role.required(method);
        CallFacts facts = CallFacts.of(request);
        if (current.permitsEverywhere(principal, needed)) {
            return Decision.allow(request);
        }
        Optional<ApiMethod> known = ApiMethod.ofWireName(method);
        if (known.isEmpty()) {
            // a method not classified yet: only an admin of every workspace (allowed above)
            return Decision.deny("the method is not classified: admin of every workspace only");
        }
        return switch (known.get()) {
            case CREATE_SANDBOX -> inWorkspace(current, principal, facts.workspace(), needed, request);
            case LIST_SANDBOXES -> list(current, principal, (ListSandboxesRequest) request);
            case WATCH_SANDBOXES ->
                facts.workspace().isEmpty()
                        // events of other workspaces are dropped as they are sent (SecurityInterceptor)
                        ? (current.workspaces(principal, needed).isEmpty()
                                ? Decision.deny("no workspace to watch")
                                : Decision.allow(request))
                        : inWorkspace(current, principal, facts.workspace(), needed, request);
            case GET_OPERATION ->
                // a request id is bound to its principal (the lifecycle answers no one else)
                current.knows(principal) ? Decision.allow(request) : Decision.deny("no role in any workspace");
            case GET_SANDBOX,
                    GET_SANDBOX_POLICY,
                    STOP_SANDBOX,
                    START_SANDBOX,
                    DELETE_SANDBOX,
                    UPDATE_SANDBOX_POLICY,
                    RENEW_SANDBOX_LEASE,
                    EXEC_SANDBOX,
                    STREAM_SANDBOX_LOGS -> target(current, principal, facts, needed, request);
        };
    }

    private static Decision inWorkspace(
            AccessPolicy policy, Principal principal, String workspace, Role needed, Object request) {
        return policy.permits(principal, workspace, needed)
                ? Decision.allow(request)
                : Decision.deny("no role " + needed.name().toLowerCase(java.util.Locale.ROOT) + " in the workspace");
    }

    private Decision target(AccessPolicy policy, Principal principal, CallFacts facts, Role needed, Object request) {
        if (!facts.workspace().isEmpty() && !policy.permits(principal, facts.workspace(), needed)) {
            return Decision.deny("no role " + needed.name().toLowerCase(java.util.Locale.ROOT) + " in the workspace");
        }
        if (facts.sandboxId().isEmpty()) {
            // named by workspace and name (checked above), or by nothing: the mapper answers INVALID_ARGUMENT
            return Decision.allow(request);
        }
        Optional<String> workspace = workspaces.of(facts.sandboxId());
        if (workspace.isPresent()) {
            return inWorkspace(policy, principal, workspace.get(), needed, request);
        }
        if (!facts.workspace().isEmpty()) {
            return Decision.allow(request); // the lifecycle answers NOT_FOUND within a permitted workspace
        }
        if (!facts.requestId().isEmpty() && requests.recordedBy(facts.requestId(), principal.ledgerName())) {
            return Decision.allow(request); // the principal's own retry: the lifecycle replays what it answered
        }
        return Decision.deny("no role " + needed.name().toLowerCase(java.util.Locale.ROOT) + " in the workspace");
    }

    /**
     * A list without a workspace: allowed when the principal has one workspace (the request is narrowed to it);
     * otherwise it must name one (a page token names the last sandbox of a page, so pages cannot span workspaces the
     * principal may not see).
     */
    private static Decision list(AccessPolicy policy, Principal principal, ListSandboxesRequest request) {
        if (!request.getWorkspace().isEmpty()) {
            return inWorkspace(policy, principal, request.getWorkspace(), Role.VIEWER, request);
        }
        Set<String> visible = policy.workspaces(principal, Role.VIEWER);
        if (visible.size() == 1) {
            return Decision.allow(
                    request.toBuilder().setWorkspace(visible.iterator().next()).build());
        }
        return Decision.deny(
                visible.isEmpty() ? "no workspace to list" : "name a workspace: the principal has several");
    }
}
