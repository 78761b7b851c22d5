package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.conformance.LaunchPolicies;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.StartResult;
import java.nio.file.Path;

/**
 * Bug: claims policy fields and stamps the policy's digest, but launches unrestricted: the backend gets no restriction
 * at all, on create and on start.
 */
public class IgnoresPolicyKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
                return delegate.create(ref, spec, unrestricted(delegate, launch));
            }

            @Override
            public StartResult start(SandboxRef ref, LaunchInput launch) {
                return delegate.start(ref, unrestricted(delegate, launch));
            }
        };
    }

    /**
     * The same generation, digest and document, with the restrictions the driver acts on taken away, after the claim
     * check a careless driver does keep: a policy using a field it does not claim is still refused.
     */
    static LaunchInput unrestricted(ComputeDriver driver, LaunchInput launch) {
        LaunchPolicy policy = launch.policy();
        driver.capabilities().requireEnforceable(policy);
        return new LaunchInput(
                launch.generation(),
                new LaunchPolicy(
                        policy.revision(),
                        policy.digest(),
                        policy.canonicalDocument(),
                        LaunchPolicies.unrestricted(),
                        DynamicPolicy.EMPTY));
    }
}
