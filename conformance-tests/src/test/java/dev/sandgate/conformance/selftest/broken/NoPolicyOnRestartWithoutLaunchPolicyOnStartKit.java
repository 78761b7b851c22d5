package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverConfig;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StartResult;
import java.nio.file.Path;

/**
 * Bug, in a driver that claims every field but the allow-list and says no to launchPolicyOnStart: every start
 * relaunches unrestricted (only the create applies the policy).
 */
public class NoPolicyOnRestartWithoutLaunchPolicyOnStartKit extends BrokenReferenceKit {
    @Override
    protected DriverConfig config() {
        return super.config().with(ReferenceDriverProvider.LAUNCH_POLICY_ON_START, "false");
    }

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
