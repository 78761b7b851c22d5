package dev.sandgate.spi;

import static java.util.Objects.requireNonNull;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * What a sandbox runs. Fixed at create; every execution of the sandbox runs the same spec.
 *
 * <p>Environment values are treated as secrets: {@link #toString()} never shows them, and drivers must not log them.
 *
 * @param image the image reference (a container image; for the VM driver, the name of a configured VM image)
 * @param command the entry point; empty means the image's default
 * @param args arguments to the entry point; empty means the image's default
 * @param environment environment variables; values are secrets
 * @param labels user labels, stamped on the runtime resource below the managed labels (which always win)
 * @param resources resource requests
 */
public record SandboxSpec(
        String image,
        List<String> command,
        List<String> args,
        Map<String, String> environment,
        Map<String, String> labels,
        ResourceRequests resources) {
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
    private static final int MAX_IMAGE_LENGTH = 512;

    public SandboxSpec {
        requireNonNull(image, "image is null");
        if (image.isBlank()) {
            throw DriverException.invalidArgument("spec.image", "is required");
        }
        if (image.length() > MAX_IMAGE_LENGTH || image.chars().anyMatch(Character::isWhitespace)) {
            throw DriverException.invalidArgument(
                    "spec.image", "must be at most " + MAX_IMAGE_LENGTH + " characters without white space");
        }
        command = List.copyOf(requireNonNull(command, "command is null"));
        args = List.copyOf(requireNonNull(args, "args is null"));
        environment = Map.copyOf(requireNonNull(environment, "environment is null"));
        labels = Map.copyOf(requireNonNull(labels, "labels is null"));
        requireNonNull(resources, "resources is null");
        for (String name : environment.keySet()) {
            if (!ENV_NAME.matcher(name).matches()) {
                throw DriverException.invalidArgument(
                        "spec.environment[" + name + "]", "is not a valid environment variable name");
            }
        }
        Labels.requireValid("spec.labels", labels);
    }

    /** A spec with only an image, for tests and defaults. */
    public static SandboxSpec ofImage(String image) {
        return new SandboxSpec(image, List.of(), List.of(), Map.of(), Map.of(), ResourceRequests.NONE);
    }

    @Override
    public String toString() {
        return "SandboxSpec[image=" + image + ", command=" + command + ", args=" + args + ", environment="
                + new TreeMap<>(environment).keySet() + " (values hidden), labels=" + labels + ", resources="
                + resources + "]";
    }
}
