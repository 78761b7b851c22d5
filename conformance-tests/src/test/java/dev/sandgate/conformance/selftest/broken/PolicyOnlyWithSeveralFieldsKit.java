package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.StartResult;
import java.nio.file.Path;

/**
 * Bug: a policy that uses a single field (the gateway's default, network none and nothing else, is one) launches
 * unrestricted; a policy using two fields or more is applied.
 */
public class PolicyOnlyWithSeveralFieldsKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
                return delegate.create(ref, spec, broken(launch));
            }

            @Override
            public StartResult start(SandboxRef ref, LaunchInput launch) {
                return delegate.start(ref, broken(launch));
            }

            private LaunchInput broken(LaunchInput launch) {
                return launch.policy().usedFields().size() < 2
                        ? IgnoresPolicyKit.unrestricted(delegate, launch)
                        : launch;
            }
        };
    }
}
