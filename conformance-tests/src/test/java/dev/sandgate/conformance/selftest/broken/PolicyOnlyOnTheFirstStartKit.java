package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StartResult;
import java.nio.file.Path;

/**
 * Bug: the policy is applied at create and at the first start (generation 2), but every later start (generation 3
 * and on) relaunches unrestricted, while stamping the policy's digest.
 */
public class PolicyOnlyOnTheFirstStartKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public StartResult start(SandboxRef ref, LaunchInput launch) {
                return delegate.start(
                        ref, launch.generation() >= 3 ? IgnoresPolicyKit.unrestricted(delegate, launch) : launch);
            }
        };
    }
}
