package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.LogListener;
import dev.sandgate.spi.LogQuery;
import dev.sandgate.spi.LogStream;
import dev.sandgate.spi.SandboxRef;
import java.nio.file.Path;

/** Bug: logs show whatever execution the sandbox runs now, not the one the call names (another execution's output). */
public class LogsShowTheCurrentExecutionKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public LogStream logs(SandboxRef ref, long generation, LogQuery query, LogListener listener) {
                return delegate.logs(ref, delegate.get(ref).generation(), query, listener);
            }
        };
    }
}
