package dev.sandgate.conformance.selftest.broken;

import dev.sandgate.driver.reference.DirectoryBackend;
import dev.sandgate.spi.SandboxRef;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.function.BiPredicate;

/** Rewrites a reference resource's stored spec, dropping the environment variables {@code drop} selects. */
final class SpecRewriter {
    private SpecRewriter() {}

    static void dropEnvironment(
            Path backendDirectory, String gatewayId, SandboxRef ref, BiPredicate<String, String> drop) {
        var backend = new DirectoryBackend(backendDirectory);
        // Under the key's lock, and only while the resource exists: a racing delete is not this bug.
        backend.locked(gatewayId, ref.id(), () -> {
            if (!backend.exists(gatewayId, ref.id())) {
                return null;
            }
            Map<String, String> spec = backend.readSpec(gatewayId, ref.id());
            var kept = new Properties();
            spec.forEach((key, value) -> {
                if (!(key.startsWith("env.") && drop.test(key.substring(4), value))) {
                    kept.setProperty(key, value);
                }
            });
            Path file = backend.resourceFolder(gatewayId, ref.id()).resolve("spec.properties");
            try (Writer out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
                kept.store(out, null);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return null;
        });
    }
}
