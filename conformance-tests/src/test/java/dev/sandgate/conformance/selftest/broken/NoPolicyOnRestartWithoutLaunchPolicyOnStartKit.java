package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.driver.reference.ReferenceDriverProvider;
import dev.sandgate.spi.DriverSettings;

/**
 * Bug, in a driver that claims every field but the allow-list and says no to launchPolicyOnStart: every start
 * relaunches unrestricted (only the create applies the policy).
 */
public class NoPolicyOnRestartWithoutLaunchPolicyOnStartKit extends IgnoresPolicyOnStartKit {
    @Override
    protected DriverSettings config() {
        return super.config().with(ReferenceDriverProvider.LAUNCH_POLICY_ON_START, "false");
    }
}
