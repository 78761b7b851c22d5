package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StopResult;
import java.nio.file.Path;
import java.util.OptionalLong;

/** Bug: stop and delete ignore the expected execution generation. */
public class IgnoresExpectedGenerationKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public StopResult stop(SandboxRef ref, OptionalLong expectedGeneration) {
                return delegate.stop(ref, OptionalLong.empty());
            }

            @Override
            public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
                return delegate.delete(ref, OptionalLong.empty());
            }
        };
    }
}
