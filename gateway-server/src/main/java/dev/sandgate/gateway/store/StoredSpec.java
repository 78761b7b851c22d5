package dev.sandgate.gateway.store;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxSpec;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a sandbox runs, as stored. Environment values are secrets: they are kept (a recovery must be able to create
 * the sandbox again) but {@link #toString()} hides them and nothing logs them.
 */
public record StoredSpec(
        String image,
        List<String> command,
        List<String> args,
        Map<String, String> environment,
        long memoryBytes,
        long milliCpus) {
    public StoredSpec {
        requireNonNull(image, "image is null");
        command = List.copyOf(requireNonNull(command, "command is null"));
        args = List.copyOf(requireNonNull(args, "args is null"));
        environment = Map.copyOf(requireNonNull(environment, "environment is null"));
    }

    /** The SPI spec, with the sandbox's user labels. */
    public SandboxSpec toSpi(Map<String, String> labels) {
        return new SandboxSpec(image, command, args, environment, labels, new ResourceRequests(memoryBytes, milliCpus));
    }

    @Override
    public String toString() {
        return "StoredSpec[image=" + image + ", command=" + command + ", args=" + args + ", environment="
                + new TreeMap<>(environment).keySet() + " (values hidden), memoryBytes=" + memoryBytes
                + ", milliCpus=" + milliCpus + "]";
    }
}
