package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.SandboxRef;
import java.nio.file.Path;
import java.util.Optional;
import java.util.OptionalLong;

/** Bug: when no resource carries the id, delete removes a sandbox with the same workspace and name. */
public class NameFallbackOnDeleteKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
                DeleteResult result = delegate.delete(ref, expectedGeneration);
                if (result.deleted()) {
                    return result;
                }
                Optional<SandboxRef> sameName = sameNameOtherId(ref);
                return sameName.isPresent() ? delegate.delete(sameName.get(), expectedGeneration) : result;
            }
        };
    }
}
