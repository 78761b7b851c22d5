package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import java.nio.file.Path;
import java.util.Map;

/** Bug: the sandbox is launched without the spec's environment. */
public class DropsEnvironmentKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
                SandboxSpec withoutEnvironment = new SandboxSpec(
                        spec.image(), spec.command(), spec.args(), Map.of(), spec.labels(), spec.resources());
                return delegate.create(ref, withoutEnvironment, launch);
            }
        };
    }
}
