package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import java.nio.file.Path;

/**
 * Bug: a create the backend refuses for good is reported as UNAVAILABLE, so the gateway would retry it forever and
 * the sandbox would stay PROVISIONING (as the container drivers did with an image they could not pull).
 */
public class ReportsPermanentFailureAsTransientKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
                try {
                    return delegate.create(ref, spec, launch);
                } catch (DriverException e) {
                    if (e.code() == DriverErrorCode.INVALID_ARGUMENT) {
                        throw new DriverException(DriverErrorCode.UNAVAILABLE, "image pull failed: " + e.getMessage());
                    }
                    throw e;
                }
            }
        };
    }
}
