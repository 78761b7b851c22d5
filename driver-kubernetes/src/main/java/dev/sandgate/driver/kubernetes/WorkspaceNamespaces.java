package dev.sandgate.driver.kubernetes;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.kubernetes.KubernetesSettings.NamespaceMode;
import dev.sandgate.driver.kubernetes.KubernetesSettings.NetworkNoneMode;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a sandbox's namespace needs before its first launch: the workspace's own namespace (per-workspace mode) and the
 * NetworkPolicy that denies all traffic to pods of network mode none. The driver never deletes either.
 */
final class WorkspaceNamespaces {
    // Logs under the driver's name, which operators filter on.
    private static final Logger log = LoggerFactory.getLogger(KubernetesDriver.class);

    private final KubernetesClient client;
    private final KubernetesSettings settings;

    WorkspaceNamespaces(KubernetesClient client, KubernetesSettings settings) {
        this.client = requireNonNull(client, "client is null");
        this.settings = requireNonNull(settings, "settings is null");
    }

    void prepare(String namespace, String workspace, LaunchInput launch) {
        if (settings.namespaceMode() == NamespaceMode.PER_WORKSPACE) {
            ensureNamespace(namespace, workspace);
        }
        if (SandboxManifests.networkNone(launch) && settings.networkNone() == NetworkNoneMode.NETWORK_POLICY) {
            ensureDenyAllPolicy(namespace);
        }
    }

    /**
     * Creates a workspace's namespace on its first sandbox, labelled as the driver's and with the baseline Pod
     * Security level enforced (sandbox pods run untrusted code). The driver never deletes namespaces.
     */
    private void ensureNamespace(String namespace, String workspace) {
        if (KubernetesErrors.call(
                        "read namespace " + namespace,
                        () -> client.namespaces().withName(namespace).get())
                != null) {
            return;
        }
        try {
            client.namespaces()
                    .resource(new NamespaceBuilder()
                            .withNewMetadata()
                            .withName(namespace)
                            .addToLabels(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE)
                            .addToLabels(Labels.WORKSPACE, workspace)
                            .addToLabels("pod-security.kubernetes.io/enforce", "baseline")
                            .endMetadata()
                            .build())
                    .create();
            log.info("Created namespace {} for a workspace", namespace);
        } catch (KubernetesClientException e) {
            if (e.getCode() != KubernetesErrors.CONFLICT) {
                throw KubernetesErrors.translate("create namespace " + namespace, e);
            }
        }
    }

    /**
     * Makes sure the namespace has the NetworkPolicy that denies all traffic of pods labelled for network mode none,
     * creating it when absent and refusing to launch when an existing one no longer denies everything.
     */
    void ensureDenyAllPolicy(String namespace) {
        NetworkPolicy existing = KubernetesErrors.call(
                "read NetworkPolicy " + namespace + "/" + SandboxManifests.NETWORK_POLICY_NAME,
                () -> client.network()
                        .networkPolicies()
                        .inNamespace(namespace)
                        .withName(SandboxManifests.NETWORK_POLICY_NAME)
                        .get());
        if (existing == null) {
            try {
                client.network()
                        .networkPolicies()
                        .inNamespace(namespace)
                        .resource(SandboxManifests.denyAllNetworkPolicy(namespace))
                        .create();
                log.info("Created NetworkPolicy {}/{}", namespace, SandboxManifests.NETWORK_POLICY_NAME);
            } catch (KubernetesClientException e) {
                if (e.getCode() != KubernetesErrors.CONFLICT) {
                    throw KubernetesErrors.translate("create NetworkPolicy in " + namespace, e);
                }
            }
            return;
        }
        if (!SandboxManifests.deniesAll(existing)) {
            throw new DriverException(
                    DriverErrorCode.FAILED_PRECONDITION,
                    "NetworkPolicy " + namespace + "/" + SandboxManifests.NETWORK_POLICY_NAME
                            + " no longer denies all traffic of pods labelled " + SandboxManifests.NETWORK_LABEL
                            + "=none; refusing to launch with network mode none");
        }
    }
}
