package dev.sandgate.driver.container;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * The labels the container drivers stamp on containers and volumes, and how they are read back.
 *
 * <p>Containers carry every managed stamp of {@link Labels} plus {@link #USER_LABEL_KEYS}, the keys of the user's
 * labels, because the engine merges the image's labels into the container's and an observation must report only the
 * user's. User labels are applied first and the managed stamps last; user labels under {@link
 * Labels#RESERVED_PREFIX} are dropped, so no user label can spoof or shadow a stamp.
 */
public final class ContainerStamps {
    /** The comma-separated keys of the user labels a container was created with. */
    public static final String USER_LABEL_KEYS = Labels.RESERVED_PREFIX + "user-label-keys";

    private ContainerStamps() {}

    /** The labels of the container running {@code launch} for {@code ref}. */
    public static Map<String, String> containerLabels(
            SandboxRef ref, String gatewayId, LaunchInput launch, Map<String, String> userLabels) {
        Map<String, String> labels = new LinkedHashMap<>();
        Map<String, String> kept = new TreeMap<>();
        userLabels.forEach((key, value) -> {
            if (!Labels.isReserved(key)) {
                kept.put(key, value);
            }
        });
        labels.putAll(kept);
        labels.putAll(volumeLabels(ref, gatewayId));
        labels.put(Labels.GENERATION, Long.toString(launch.generation()));
        labels.put(Labels.POLICY_DIGEST, launch.policy().digest());
        labels.put(USER_LABEL_KEYS, String.join(",", kept.keySet()));
        return labels;
    }

    /** The labels of {@code ref}'s workspace volume. */
    public static Map<String, String> volumeLabels(SandboxRef ref, String gatewayId) {
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE);
        labels.put(Labels.GATEWAY_ID, gatewayId);
        labels.put(Labels.SANDBOX_ID, ref.id());
        labels.put(Labels.WORKSPACE, ref.workspace());
        labels.put(Labels.NAME, ref.name());
        return labels;
    }

    /** The user labels among a container's {@code labels}: those listed in {@link #USER_LABEL_KEYS}. */
    public static Map<String, String> userLabels(Map<String, String> labels) {
        String keys = labels.getOrDefault(USER_LABEL_KEYS, "");
        if (keys.isEmpty()) {
            return Map.of();
        }
        Set<String> listed = Arrays.stream(keys.split(",")).collect(Collectors.toSet());
        Map<String, String> user = new TreeMap<>();
        labels.forEach((key, value) -> {
            if (listed.contains(key) && !Labels.isReserved(key)) {
                user.put(key, value);
            }
        });
        return user;
    }

    /** The generation stamped in {@code labels}; empty if absent or malformed. */
    public static OptionalLong generation(Map<String, String> labels) {
        return Labels.parseGeneration(labels.get(Labels.GENERATION));
    }

    /**
     * The sandbox identity stamped in {@code labels}.
     *
     * @throws DriverException INTERNAL if the stamps are missing or malformed ({@code what} names the resource)
     */
    public static SandboxRef ref(Map<String, String> labels, String what) {
        return SandboxRef.fromStamps(labels)
                .orElseThrow(() -> new DriverException(
                        DriverErrorCode.INTERNAL, what + " carries missing or malformed sandgate identity stamps"));
    }
}
