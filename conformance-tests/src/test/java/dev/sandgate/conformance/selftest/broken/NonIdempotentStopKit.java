package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.StopResult;
import java.nio.file.Path;
import java.util.OptionalLong;

/** Bug: stopping a stopped sandbox fails instead of succeeding with stoppedNow == false. */
public class NonIdempotentStopKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public StopResult stop(SandboxRef ref, OptionalLong expectedGeneration) {
                if (delegate.get(ref).state() == SandboxState.STOPPED) {
                    throw new DriverException(
                            DriverErrorCode.FAILED_PRECONDITION, "sandbox " + ref + " is not running");
                }
                return delegate.stop(ref, expectedGeneration);
            }
        };
    }
}
