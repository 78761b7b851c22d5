package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StartResult;
import dev.sandgate.spi.StopResult;
import java.nio.file.Path;
import java.util.OptionalLong;
import java.util.function.Supplier;

/**
 * Bug: when the backend says the resource changed under a mutation, the driver looks it up again and mutates whatever
 * now carries the id ("retry on conflict"), touching a replacement it never verified against the request.
 */
public class RetriesOntoAReplacedResourceKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public StopResult stop(SandboxRef ref, OptionalLong expectedGeneration) {
                return retryOnAbort(() -> delegate.stop(ref, expectedGeneration));
            }

            @Override
            public StartResult start(SandboxRef ref, LaunchInput launch) {
                return retryOnAbort(() -> delegate.start(ref, launch));
            }

            @Override
            public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
                return retryOnAbort(() -> delegate.delete(ref, expectedGeneration));
            }
        };
    }

    private static <T> T retryOnAbort(Supplier<T> call) {
        try {
            return call.get();
        } catch (DriverException e) {
            if (e.code() == DriverErrorCode.ABORTED) {
                return call.get();
            }
            throw e;
        }
    }
}
