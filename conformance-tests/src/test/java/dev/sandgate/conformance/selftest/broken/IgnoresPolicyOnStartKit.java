package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StartResult;
import java.nio.file.Path;

/** Bug: a start stamps the new policy's digest but relaunches without its restrictions. */
public class IgnoresPolicyOnStartKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public StartResult start(SandboxRef ref, LaunchInput launch) {
                return delegate.start(ref, IgnoresPolicyKit.unrestricted(delegate, launch));
            }
        };
    }
}
