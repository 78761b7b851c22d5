package dev.sandgate.gateway.security;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.CreateSandboxResponse;
import dev.sandgate.api.v1.DeleteSandboxRequest;
import dev.sandgate.api.v1.DeleteSandboxResponse;
import dev.sandgate.api.v1.ExecSandboxRequest;
import dev.sandgate.api.v1.GetOperationRequest;
import dev.sandgate.api.v1.GetSandboxPolicyRequest;
import dev.sandgate.api.v1.GetSandboxRequest;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.RenewSandboxLeaseRequest;
import dev.sandgate.api.v1.RenewSandboxLeaseResponse;
import dev.sandgate.api.v1.SandboxTarget;
import dev.sandgate.api.v1.StartSandboxRequest;
import dev.sandgate.api.v1.StartSandboxResponse;
import dev.sandgate.api.v1.StopSandboxRequest;
import dev.sandgate.api.v1.StopSandboxResponse;
import dev.sandgate.api.v1.StreamSandboxLogsRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyRequest;
import dev.sandgate.api.v1.UpdateSandboxPolicyResponse;
import dev.sandgate.api.v1.WatchSandboxesRequest;

/**
 * What a request names, as the client wrote it (unvalidated: the API mapper validates): the workspace, the name, the
 * sandbox id and the request id; empty strings where it names none.
 *
 * @param targeted whether the request names one sandbox (a target), as opposed to a workspace (create, list, watch)
 */
record CallFacts(String workspace, String name, String sandboxId, String requestId, boolean targeted) {
    static final CallFacts NONE = new CallFacts("", "", "", "", false);

    static CallFacts of(Object request) {
        return switch (request) {
            case CreateSandboxRequest r -> new CallFacts(r.getWorkspace(), r.getName(), "", r.getRequestId(), false);
            case GetSandboxRequest r -> target(r.getTarget(), "");
            case GetSandboxPolicyRequest r -> target(r.getTarget(), "");
            case StopSandboxRequest r -> target(r.getTarget(), r.getRequestId());
            case StartSandboxRequest r -> target(r.getTarget(), r.getRequestId());
            case DeleteSandboxRequest r -> target(r.getTarget(), r.getRequestId());
            case UpdateSandboxPolicyRequest r -> target(r.getTarget(), r.getRequestId());
            case RenewSandboxLeaseRequest r -> target(r.getTarget(), r.getRequestId());
            case ListSandboxesRequest r -> new CallFacts(r.getWorkspace(), "", "", "", false);
            case WatchSandboxesRequest r -> new CallFacts(r.getWorkspace(), "", "", "", false);
            case GetOperationRequest r -> new CallFacts("", "", "", r.getRequestId(), false);
            // the first message of an exec names the target; later ones (stdin, resize) name nothing
            case ExecSandboxRequest r ->
                target(r.getStart().getTarget(), r.getStart().getRequestId());
            case StreamSandboxLogsRequest r -> target(r.getTarget(), "");
            default -> NONE;
        };
    }

    private static CallFacts target(SandboxTarget target, String requestId) {
        return new CallFacts(target.getWorkspace(), target.getName(), target.getId(), requestId, true);
    }

    /**
     * What the audit line says of a request beyond its target: for an exec, its program (argv[0]; never its
     * arguments, environment or input, which may hold secrets). Empty for other requests.
     */
    static String auditDetail(Object request) {
        return request instanceof ExecSandboxRequest r
                        && r.hasStart()
                        && r.getStart().getCommandCount() > 0
                ? "command=" + r.getStart().getCommand(0)
                : "";
    }

    /** The sandbox id a mutating call's response names; empty for other responses. */
    static String sandboxIdOf(Object response) {
        return switch (response) {
            case CreateSandboxResponse r -> r.getSandbox().getId();
            case StopSandboxResponse r -> r.getSandbox().getId();
            case StartSandboxResponse r -> r.getSandbox().getId();
            case DeleteSandboxResponse r -> r.getSandboxId();
            case UpdateSandboxPolicyResponse r -> r.getSandbox().getId();
            case RenewSandboxLeaseResponse r -> r.getSandbox().getId();
            default -> "";
        };
    }

    static boolean mutating(String method) {
        return Role.required(method) != Role.VIEWER;
    }
}
