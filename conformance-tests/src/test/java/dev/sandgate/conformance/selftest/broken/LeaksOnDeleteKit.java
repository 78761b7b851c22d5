package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.driver.reference.DirectoryBackend;
import dev.sandgate.driver.reference.StoredResource;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DeleteResult;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.SandboxRef;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;

/**
 * Bug: delete leaves a backend resource of the sandbox behind (as a container driver that forgets the sandbox's
 * volume would). The leftover carries the sandbox's stamps but is stored under another key, so the driver itself no
 * longer sees it; only the backend does.
 */
public class LeaksOnDeleteKit extends BrokenReferenceKit {
    /** Shorter: the kit waits this long, six times, for a leaked resource to vanish. */
    @Override
    protected Duration readinessTimeout() {
        return Duration.ofSeconds(4);
    }

    @Override
    ComputeDriver breakDriver(ComputeDriver reference, Path backendDirectory, DriverContext context) {
        var backend = new DirectoryBackend(backendDirectory);
        String gatewayId = context.gatewayId();
        return new ForwardingComputeDriver(reference) {
            @Override
            public DeleteResult delete(SandboxRef ref, OptionalLong expectedGeneration) {
                Optional<StoredResource> before = backend.read(gatewayId, ref.id());
                DeleteResult result = delegate.delete(ref, expectedGeneration);
                if (result.deleted() && before.isPresent()) {
                    String key = "leftover-" + ref.id();
                    var leftover = new StoredResource(
                            gatewayId,
                            key,
                            UUID.randomUUID().toString(),
                            StoredResource.State.STOPPED,
                            before.get().labels());
                    backend.locked(gatewayId, key, () -> {
                        backend.insert(leftover, Map.of());
                        return null;
                    });
                }
                return result;
            }
        };
    }
}
