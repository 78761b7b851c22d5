package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StartResult;
import java.nio.file.Path;

/** Bug: every start (not the create) loses the variables whose value is empty. */
public class DropsEmptyEnvironmentOnRestartKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public StartResult start(SandboxRef ref, LaunchInput launch) {
                StartResult result = delegate.start(ref, launch);
                if (result.launched()) {
                    SpecRewriter.dropEnvironment(
                            backendDirectory, context.gatewayId(), ref, (name, value) -> value.isEmpty());
                }
                return result;
            }
        };
    }
}
