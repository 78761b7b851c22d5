package dev.sandgate.gateway.grpc;

import io.grpc.Context;
import java.util.function.Predicate;

/**
 * The workspaces whose sandboxes a call may see, as the boundary decided when it authorized the call. A watch stream
 * sends nothing of the others: neither their snapshots nor their changes. Without a boundary that narrows it, every
 * workspace is visible.
 */
public final class VisibleWorkspaces {
    /** Set in the call's {@link Context} by the boundary; asked for each sandbox a watch would send. */
    public static final Context.Key<Predicate<String>> KEY =
            Context.keyWithDefault("sandgate-visible-workspaces", workspace -> true);

    private VisibleWorkspaces() {}
}
