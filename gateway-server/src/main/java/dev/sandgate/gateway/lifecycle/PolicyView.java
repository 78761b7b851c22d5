package dev.sandgate.gateway.lifecycle;

import static java.util.Objects.requireNonNull;

import dev.sandgate.gateway.store.PolicyRevisionRecord;
import dev.sandgate.gateway.store.SandboxRecord;

/**
 * A sandbox's policy state.
 *
 * @param sandbox the sandbox
 * @param admitted the latest admitted revision
 * @param currentLaunch the revision captured for the current execution
 */
public record PolicyView(SandboxRecord sandbox, PolicyRevisionRecord admitted, PolicyRevisionRecord currentLaunch) {
    public PolicyView {
        requireNonNull(sandbox, "sandbox is null");
        requireNonNull(admitted, "admitted is null");
        requireNonNull(currentLaunch, "currentLaunch is null");
    }
}
