package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.driver.reference.DirectoryBackend;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.CreateResult;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import java.nio.file.Path;

/** Bug: user labels are applied after the managed stamps, so a user label can spoof an identity stamp. */
public class UserLabelsWinKit extends BrokenReferenceKit {
    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        var backend = new DirectoryBackend(backendDirectory);
        String gatewayId = context.gatewayId();
        return new ForwardingComputeDriver(reference) {
            @Override
            public CreateResult create(SandboxRef ref, SandboxSpec spec, LaunchInput launch) {
                CreateResult result = delegate.create(ref, spec, launch);
                if (result.created() && !spec.labels().isEmpty()) {
                    backend.locked(gatewayId, ref.id(), () -> {
                        backend.read(gatewayId, ref.id())
                                .map(stored -> stored.withLabels(spec.labels()))
                                .ifPresent(backend::replace);
                        return null;
                    });
                }
                return result;
            }
        };
    }
}
