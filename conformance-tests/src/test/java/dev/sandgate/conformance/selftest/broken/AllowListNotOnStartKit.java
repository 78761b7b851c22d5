package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StartResult;
import java.nio.file.Path;

/**
 * Bug, in a driver that claims every field, NETWORK_ALLOW_LIST included: a start relaunches without the allow-list
 * (the static restrictions are applied), so a sandbox restarted under an allow-list reaches every destination.
 */
public class AllowListNotOnStartKit extends BrokenReferenceKit {
    @Override
    protected DriverSettings config() {
        return super.config()
                .with(
                        ReferenceDriverProvider.ENFORCEABLE_FIELDS,
                        "READ_ONLY_ROOT_FILESYSTEM,NETWORK_NONE,DROP_CAPABILITIES,NO_NEW_PRIVILEGES,MEMORY_LIMIT,"
                                + "CPU_LIMIT,PIDS_LIMIT,NETWORK_ALLOW_LIST");
    }

    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public StartResult start(SandboxRef ref, LaunchInput launch) {
                LaunchPolicy policy = launch.policy();
                delegate.capabilities().requireEnforceable(policy);
                return delegate.start(
                        ref,
                        new LaunchInput(
                                launch.generation(),
                                new LaunchPolicy(
                                        policy.revision(),
                                        policy.digest(),
                                        policy.canonicalDocument(),
                                        policy.staticPolicy(),
                                        DynamicPolicy.EMPTY)));
            }
        };
    }
}
