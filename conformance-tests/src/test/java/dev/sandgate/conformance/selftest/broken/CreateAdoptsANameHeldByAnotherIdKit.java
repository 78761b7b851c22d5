package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Bug: create of a new id finds the workspace and name held by another id's resource and answers with that resource
 * ({@code created == false}), as a driver that looks a create up by name and takes what it finds for a retry would.
 */
public class CreateAdoptsANameHeldByAnotherIdKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
                Optional<SandboxRef> holder = sameNameOtherId(ref);
                if (holder.isPresent()) {
                    return new CreateResult(delegate.get(holder.get()), false);
                }
                return delegate.create(ref, spec, launch);
            }
        };
    }
}
