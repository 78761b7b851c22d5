package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StartResult;
import java.nio.file.Path;

/**
 * Bug: a start with another policy than the running one rebuilds the execution (as a container driver recreates its
 * container) and loses every variable whose value is empty or holds a new line. A start with the same policy keeps
 * the environment.
 */
public class DropsOddEnvironmentOnPolicyChangeKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public StartResult start(SandboxRef ref, LaunchInput launch) {
                String before = delegate.get(ref).policyDigest();
                StartResult result = delegate.start(ref, launch);
                if (result.launched() && !launch.policy().digest().equals(before)) {
                    SpecRewriter.dropEnvironment(
                            backendDirectory,
                            context.gatewayId(),
                            ref,
                            (name, value) -> value.isEmpty() || value.contains("\n"));
                }
                return result;
            }
        };
    }
}
