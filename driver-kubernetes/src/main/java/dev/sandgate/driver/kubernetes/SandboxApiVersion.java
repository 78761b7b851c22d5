package dev.sandgate.driver.kubernetes;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The versions of the Agent Sandbox API ({@code agents.x-k8s.io}, kind {@code Sandbox}) this driver speaks, newest
 * first. They differ in the field that stops and starts a sandbox: {@code spec.operatingMode} (Running or Suspended)
 * in v1beta1, {@code spec.replicas} (1 or 0) in v1alpha1. Pod template, volume claim templates and the {@code Ready}
 * and {@code Suspended} conditions are the same in both.
 */
@SuppressWarnings("ImmutableEnumChecker") // fabric8's ResourceDefinitionContext is never changed once built
enum SandboxApiVersion {
    V1BETA1("v1beta1") {
        @Override
        boolean desiredRunning(GenericKubernetesResource sandbox) {
            Object mode = SandboxObjects.spec(sandbox).get("operatingMode");
            return mode == null || "Running".equals(mode);
        }

        @Override
        Map<String, Object> runModeFields(boolean running) {
            return Map.of("operatingMode", running ? "Running" : "Suspended");
        }
    },
    V1ALPHA1("v1alpha1") {
        @Override
        boolean desiredRunning(GenericKubernetesResource sandbox) {
            Object replicas = SandboxObjects.spec(sandbox).get("replicas");
            return !(replicas instanceof Number number) || number.intValue() != 0;
        }

        @Override
        Map<String, Object> runModeFields(boolean running) {
            return Map.of("replicas", running ? 1 : 0);
        }
    };

    static final String GROUP = "agents.x-k8s.io";
    static final String KIND = "Sandbox";
    static final String PLURAL = "sandboxes";

    private final String version;
    private final ResourceDefinitionContext context;

    SandboxApiVersion(String version) {
        this.version = version;
        this.context = new ResourceDefinitionContext.Builder()
                .withGroup(GROUP)
                .withVersion(version)
                .withKind(KIND)
                .withPlural(PLURAL)
                .withNamespaced(true)
                .build();
    }

    /** The version name, e.g. {@code v1beta1}. */
    String version() {
        return version;
    }

    /** {@code agents.x-k8s.io/<version>}. */
    String apiVersion() {
        return GROUP + "/" + version;
    }

    ResourceDefinitionContext context() {
        return context;
    }

    /** Whether the sandbox's spec asks the controller to keep a pod running. */
    abstract boolean desiredRunning(GenericKubernetesResource sandbox);

    /** The spec fields that ask for a running ({@code true}) or a stopped sandbox. */
    abstract Map<String, Object> runModeFields(boolean running);

    static Optional<SandboxApiVersion> named(String version) {
        return Arrays.stream(values())
                .filter(value -> value.version.equals(version))
                .findFirst();
    }

    static List<String> names() {
        return Arrays.stream(values()).map(SandboxApiVersion::version).toList();
    }
}
