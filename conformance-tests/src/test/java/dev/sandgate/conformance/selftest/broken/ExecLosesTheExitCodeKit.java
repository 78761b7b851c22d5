package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.ExecCommand;
import dev.sandgate.spi.ExecListener;
import dev.sandgate.spi.ExecProcess;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StreamKind;
import java.nio.file.Path;

/** Bug: exec claims the capability but reports every command as exiting with 0. */
public class ExecLosesTheExitCodeKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        return new ForwardingComputeDriver(reference) {
            @Override
            public ExecProcess exec(SandboxRef ref, long generation, ExecCommand command, ExecListener listener) {
                return delegate.exec(ref, generation, command, new ExecListener() {
                    @Override
                    public void output(StreamKind stream, byte[] data) {
                        listener.output(stream, data);
                    }

                    @Override
                    public void exited(int exitCode) {
                        listener.exited(0);
                    }

                    @Override
                    public void failed(DriverException error) {
                        listener.failed(error);
                    }
                });
            }
        };
    }
}
