package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.MutationHook;
import java.nio.file.Path;

/** Bug: the driver never calls the gateway's MutationHook (here: it is handed a hook that does nothing). */
public class NeverCallsMutationHookKit extends BrokenReferenceKit {
    @Override
    DriverContext contextFor(DriverContext kitContext) {
        return new DriverContext(kitContext.gatewayId(), kitContext.clock(), MutationHook.NONE);
    }

    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return reference;
    }
}
