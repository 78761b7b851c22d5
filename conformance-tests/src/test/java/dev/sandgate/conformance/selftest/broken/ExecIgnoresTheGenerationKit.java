package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.SandboxRef;
import java.nio.file.Path;

/** Bug: exec runs in whatever execution the sandbox runs now, not in the one the call names. */
public class ExecIgnoresTheGenerationKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public ExecProcess exec(SandboxRef ref, long generation, ExecCommand command, ExecListener listener) {
                return delegate.exec(ref, delegate.get(ref).generation(), command, listener);
            }
        };
    }
}
