package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.driver.reference.DirectoryBackend;
import dev.sandgate.driver.reference.StoredResource;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.MutationHook;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.StartResult;
import java.nio.file.Path;

/**
 * Bug: start resolves the sandbox by its id and verifies it, calls the hook with its backend id, then launches
 * whatever sandbox now has the workspace and name (an engine call by container name, say). Only a replacement that a
 * start could launch, a stopped one, shows it: a running one is refused by the Start(G) rules anyway.
 */
public class StartsByNameAfterCheckingTheIdKit extends BrokenReferenceKit {
    private volatile MutationHook kitHook = MutationHook.NONE;

    /** The reference driver announces every mutation but START; this driver announces START itself. */
    @Override
    DriverContext contextFor(DriverContext kitContext) {
        kitHook = kitContext.mutationHook();
        MutationHook hook = kitContext.mutationHook();
        return new DriverContext(kitContext.gatewayId(), kitContext.clock(), (ref, operation, backendId) -> {
            if (operation != MutationHook.Operation.START) {
                hook.beforeMutation(ref, operation, backendId);
            }
        });
    }

    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        var backend = new DirectoryBackend(backendDirectory);
        return new ForwardingComputeDriver(reference) {
            @Override
            public StartResult start(SandboxRef ref, LaunchInput launch) {
                SandboxObservation checked = delegate.get(ref); // NOT_FOUND, or FAILED_PRECONDITION on a mismatch
                boolean runsThatGeneration =
                        checked.state() == SandboxState.RUNNING && checked.generation() == launch.generation();
                if (!runsThatGeneration) {
                    String backendId = backend.read(context.gatewayId(), ref.id())
                            .map(StoredResource::backendId)
                            .orElseThrow(() -> DriverException.notFound(ref));
                    kitHook.beforeMutation(ref, MutationHook.Operation.START, backendId);
                }
                SandboxRef byName = byName(ref).orElseThrow(() -> DriverException.notFound(ref));
                return delegate.start(byName, launch);
            }
        };
    }
}
