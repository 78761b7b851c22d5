package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import java.nio.file.Path;

/**
 * Bug: create of an id that already exists goes on with the workspace and name the resource carries, whatever it was
 * asked with, instead of refusing the mismatch (generation and digest are still checked).
 */
public class CreateIgnoresIdentityKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
                SandboxRef stored = delegate.list().stream()
                        .map(existing -> existing.ref())
                        .filter(existing -> existing.id().equals(ref.id()))
                        .findFirst()
                        .orElse(ref);
                return delegate.create(stored, spec, launch);
            }
        };
    }
}
