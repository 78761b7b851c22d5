package dev.sandgate.driver.kubernetes;

import dev.sandgate.spi.Labels;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxState;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;

/** Reading Sandbox objects: the stamps the driver put on them and the state the controller reports. */
final class SandboxObjects {
    static final String CONDITION_READY = "Ready";
    static final String CONDITION_SUSPENDED = "Suspended";

    private SandboxObjects() {}

    /** What the driver stamped on a Sandbox: identity, generation and policy digest, plus the user's labels. */
    record Stamps(SandboxRef ref, long generation, String policyDigest, Map<String, String> userLabels) {}

    /** The driver's stamps, or empty when the object does not carry a complete, well-formed set. */
    static Optional<Stamps> stamps(GenericKubernetesResource sandbox) {
        ObjectMeta metadata = sandbox.getMetadata();
        if (metadata == null) {
            return Optional.empty();
        }
        Map<String, String> labels = orEmpty(metadata.getLabels());
        Map<String, String> annotations = orEmpty(metadata.getAnnotations());
        String id = labels.get(Labels.SANDBOX_ID);
        String workspace = labels.get(Labels.WORKSPACE);
        String name = annotations.get(Labels.NAME);
        String generation = labels.get(Labels.GENERATION);
        String digest = annotations.get(Labels.POLICY_DIGEST);
        Optional<SandboxRef> ref = SandboxRef.parse(id, workspace, name);
        OptionalLong parsed = Labels.parseGeneration(generation);
        if (ref.isEmpty() || parsed.isEmpty() || digest == null) {
            return Optional.empty();
        }
        Map<String, String> user = new TreeMap<>(labels);
        user.keySet().removeIf(Labels::isReserved);
        return Optional.of(new Stamps(ref.get(), parsed.getAsLong(), digest, user));
    }

    /** The object's UID, its immutable backend identifier. */
    static String uid(GenericKubernetesResource sandbox) {
        return sandbox.getMetadata().getUid();
    }

    static boolean beingDeleted(GenericKubernetesResource sandbox) {
        return sandbox.getMetadata().getDeletionTimestamp() != null;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> spec(GenericKubernetesResource sandbox) {
        Object spec = sandbox.getAdditionalProperties().get("spec");
        return spec instanceof Map<?, ?> map ? (Map<String, Object>) map : Map.of();
    }

    /** The state of the sandbox's execution, read from the controller's conditions, with a short detail. */
    record Reading(SandboxState state, String detail) {}

    static Reading read(GenericKubernetesResource sandbox, SandboxApiVersion version) {
        if (beingDeleted(sandbox)) {
            return new Reading(SandboxState.STOPPING, "being deleted");
        }
        Optional<Map<String, Object>> ready = currentCondition(sandbox, CONDITION_READY);
        if (!version.desiredRunning(sandbox)) {
            Optional<Map<String, Object>> suspended = currentCondition(sandbox, CONDITION_SUSPENDED);
            if (suspended.isPresent() && "True".equals(suspended.get().get("status"))) {
                return new Reading(SandboxState.STOPPED, "suspended");
            }
            return new Reading(
                    SandboxState.STOPPING,
                    suspended.map(SandboxObjects::describe).orElse("suspending"));
        }
        if (ready.isEmpty()) {
            return new Reading(SandboxState.PROVISIONING, "waiting for the Agent Sandbox controller");
        }
        Map<String, Object> condition = ready.get();
        if ("True".equals(condition.get("status"))) {
            return new Reading(SandboxState.RUNNING, "");
        }
        String reason = String.valueOf(condition.get("reason"));
        SandboxState state = switch (reason) {
            case "PodFailed", "MultiplePods" -> SandboxState.FAILED;
            case "PodSucceeded", "SandboxExpired" -> SandboxState.STOPPED;
            default -> SandboxState.PROVISIONING;
        };
        return new Reading(state, describe(condition));
    }

    /**
     * The condition of {@code type} if the controller wrote it for the object's current spec: a condition whose
     * {@code observedGeneration} is older than {@code metadata.generation} describes an earlier spec (before the last
     * stop or start) and is ignored. A condition without {@code observedGeneration} is taken as current.
     */
    @SuppressWarnings("unchecked")
    static Optional<Map<String, Object>> currentCondition(GenericKubernetesResource sandbox, String type) {
        Object status = sandbox.getAdditionalProperties().get("status");
        if (!(status instanceof Map<?, ?> statusMap) || !(statusMap.get("conditions") instanceof List<?> conditions)) {
            return Optional.empty();
        }
        Long generation = sandbox.getMetadata().getGeneration();
        for (Object item : conditions) {
            if (item instanceof Map<?, ?> condition && type.equals(condition.get("type"))) {
                Object observed = condition.get("observedGeneration");
                boolean current = observed == null
                        || generation == null
                        || (observed instanceof Number number && number.longValue() >= generation);
                return current ? Optional.of((Map<String, Object>) condition) : Optional.empty();
            }
        }
        return Optional.empty();
    }

    private static String describe(Map<String, Object> condition) {
        Object message = condition.get("message");
        String reason = String.valueOf(condition.get("reason"));
        return message == null || message.toString().isBlank() ? reason : reason + ": " + message;
    }

    /** The observation of a Sandbox whose stamps are known. */
    static SandboxObservation observe(GenericKubernetesResource sandbox, Stamps stamps, SandboxApiVersion version) {
        Reading reading = read(sandbox, version);
        return new SandboxObservation(
                stamps.ref(),
                stamps.generation(),
                reading.state(),
                stamps.policyDigest(),
                stamps.userLabels(),
                reading.detail());
    }

    private static Map<String, String> orEmpty(Map<String, String> map) {
        return map == null ? Map.of() : map;
    }
}
