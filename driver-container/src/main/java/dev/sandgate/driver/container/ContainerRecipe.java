package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import com.github.dockerjava.api.model.ContainerConfig;
import dev.sandgate.spi.SandboxSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What every container of one sandbox runs: the spec given at create, kept in the engine as the configuration of the
 * sandbox's current container, and read back from it for the next execution.
 *
 * <p>Read back, the entry point, arguments and environment are the engine's effective ones (the image's defaults
 * merged in), which launch the same process.
 *
 * @param image the image reference
 * @param entrypoint the entry point; empty for the image's
 * @param cmd the arguments; empty for the image's
 * @param environment {@code NAME=value} entries; the values are secrets and never shown
 * @param userLabels the user's labels
 */
record ContainerRecipe(
        String image,
        List<String> entrypoint,
        List<String> cmd,
        List<String> environment,
        Map<String, String> userLabels) {
    ContainerRecipe {
        requireNonNull(image, "image is null");
        entrypoint = List.copyOf(requireNonNull(entrypoint, "entrypoint is null"));
        cmd = List.copyOf(requireNonNull(cmd, "cmd is null"));
        environment = List.copyOf(requireNonNull(environment, "environment is null"));
        userLabels = Map.copyOf(requireNonNull(userLabels, "userLabels is null"));
    }

    static ContainerRecipe of(SandboxSpec spec) {
        List<String> environment = new ArrayList<>();
        new TreeMap<>(spec.environment()).forEach((name, value) -> environment.add(name + "=" + value));
        return new ContainerRecipe(spec.image(), spec.command(), spec.args(), environment, spec.labels());
    }

    /** The recipe of an existing container, from its inspected configuration. */
    static ContainerRecipe of(ContainerConfig config) {
        Map<String, String> labels = config.getLabels() == null ? Map.of() : config.getLabels();
        return new ContainerRecipe(
                requireNonNull(config.getImage(), "the container's configuration names no image"),
                list(config.getEntrypoint()),
                list(config.getCmd()),
                list(config.getEnv()),
                ContainerStamps.userLabels(labels));
    }

    private static List<String> list(String[] values) {
        return values == null ? List.of() : Arrays.asList(values);
    }

    @Override
    public String toString() {
        List<String> names = environment.stream()
                .map(entry -> entry.contains("=") ? entry.substring(0, entry.indexOf('=')) : entry)
                .toList();
        return "ContainerRecipe[image=" + image + ", entrypoint=" + entrypoint + ", cmd=" + cmd + ", environment="
                + names + " (values hidden), userLabels=" + userLabels + "]";
    }
}
