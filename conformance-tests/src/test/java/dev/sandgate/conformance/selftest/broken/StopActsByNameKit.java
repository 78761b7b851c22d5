package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StopResult;
import java.nio.file.Path;
import java.util.OptionalLong;

/** Bug: stop ignores the id and stops whatever sandbox has the requested workspace and name. */
public class StopActsByNameKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public StopResult stop(SandboxRef ref, OptionalLong expectedGeneration) {
                SandboxRef found = byName(ref).orElseThrow(() -> DriverException.notFound(ref));
                return delegate.stop(found, expectedGeneration);
            }
        };
    }
}
