package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.spi.DriverContext;
import java.nio.file.Path;
import java.util.Set;

/**
 * Bug: the driver says it enforces no policy field, yet accepts policies that use them (a "no" that is not kept: the
 * fields would be silently ignored).
 */
public class ClaimsFewerCapabilitiesKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public DriverCapabilities capabilities() {
                DriverCapabilities real = delegate.capabilities();
                return new DriverCapabilities(
                        Set.of(), real.launchPolicyOnStart(), real.persistentWorkspace(), real.exec(), real.logs());
            }
        };
    }
}
