package dev.sandgate.driver.kubernetes;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.Identifiers;
import io.fabric8.kubernetes.api.model.Quantity;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * The Kubernetes driver's settings, read from the gateway's {@link DriverSettings}. Every key starts with {@code
 * kubernetes.}; docs/drivers/kubernetes.md lists them.
 *
 * @param masterUrl the API server; empty means the usual discovery (in-cluster service account, then kubeconfig)
 * @param kubeconfigContext the kubeconfig context to use when discovering; empty means the current one
 * @param namespaceMode one shared namespace, or one namespace per workspace
 * @param namespace the shared namespace; empty means the client's namespace (the gateway pod's own in a cluster)
 * @param namespacePrefix the prefix of per-workspace namespaces
 * @param apiVersion the Sandbox API version to use; empty means the newest one the cluster serves
 * @param workspaceSize the size requested for each sandbox's workspace volume claim
 * @param storageClass the storage class of workspace volume claims; empty means the cluster's default
 * @param workspaceMountPath where the workspace volume is mounted in the sandbox's container
 * @param networkNone how a launch policy with network mode none is enforced
 * @param operationTimeout how long stop and delete wait for the controller to report the result
 * @param requestTimeout the timeout of each API request
 */
record KubernetesSettings(
        Optional<String> masterUrl,
        Optional<String> kubeconfigContext,
        NamespaceMode namespaceMode,
        Optional<String> namespace,
        String namespacePrefix,
        Optional<SandboxApiVersion> apiVersion,
        Quantity workspaceSize,
        Optional<String> storageClass,
        String workspaceMountPath,
        NetworkNoneMode networkNone,
        Duration operationTimeout,
        Duration requestTimeout) {
    static final String MASTER_URL = "kubernetes.master-url";
    static final String CONTEXT = "kubernetes.context";
    static final String NAMESPACE_MODE = "kubernetes.namespace-mode";
    static final String NAMESPACE = "kubernetes.namespace";
    static final String NAMESPACE_PREFIX = "kubernetes.namespace-prefix";
    static final String API_VERSION = "kubernetes.sandbox-api-version";
    static final String WORKSPACE_SIZE = "kubernetes.workspace-size";
    static final String STORAGE_CLASS = "kubernetes.storage-class";
    static final String WORKSPACE_MOUNT_PATH = "kubernetes.workspace-mount-path";
    static final String NETWORK_NONE = "kubernetes.network-none";
    static final String OPERATION_TIMEOUT = "kubernetes.operation-timeout";
    static final String REQUEST_TIMEOUT = "kubernetes.request-timeout";

    /** Where sandboxes live. */
    enum NamespaceMode {
        /** Every sandbox in {@code kubernetes.namespace}, its resource name prefixed with its workspace. */
        SHARED,
        /** One namespace per workspace, named {@code kubernetes.namespace-prefix} + workspace. */
        PER_WORKSPACE
    }

    /** How network mode none is enforced; Kubernetes has no pod without a network interface. */
    enum NetworkNoneMode {
        /** A policy with network mode none is refused with UNSUPPORTED. */
        UNSUPPORTED,
        /**
         * The sandbox's pod carries {@link SandboxManifests#NETWORK_LABEL}{@code =none}, and the driver keeps a
         * NetworkPolicy in its namespace that denies all ingress and egress of such pods. The operator asserts with
         * this setting that the cluster's network plugin enforces NetworkPolicy.
         */
        NETWORK_POLICY
    }

    KubernetesSettings {
        requireNonNull(masterUrl, "masterUrl is null");
        requireNonNull(kubeconfigContext, "kubeconfigContext is null");
        requireNonNull(namespaceMode, "namespaceMode is null");
        requireNonNull(namespace, "namespace is null");
        requireNonNull(namespacePrefix, "namespacePrefix is null");
        requireNonNull(apiVersion, "apiVersion is null");
        requireNonNull(workspaceSize, "workspaceSize is null");
        requireNonNull(storageClass, "storageClass is null");
        requireNonNull(workspaceMountPath, "workspaceMountPath is null");
        requireNonNull(networkNone, "networkNone is null");
        requireNonNull(operationTimeout, "operationTimeout is null");
        requireNonNull(requestTimeout, "requestTimeout is null");
    }

    static KubernetesSettings from(DriverSettings config) {
        config.rejectUnknown(
                "kubernetes.",
                Set.of(
                        MASTER_URL,
                        CONTEXT,
                        NAMESPACE_MODE,
                        NAMESPACE,
                        NAMESPACE_PREFIX,
                        API_VERSION,
                        WORKSPACE_SIZE,
                        STORAGE_CLASS,
                        WORKSPACE_MOUNT_PATH,
                        NETWORK_NONE,
                        OPERATION_TIMEOUT,
                        REQUEST_TIMEOUT),
                Set.of());
        Optional<String> namespace = config.get(NAMESPACE).map(String::trim);
        namespace.ifPresent(value -> Identifiers.requireDnsLabel(NAMESPACE, value));
        String prefix = config.get(NAMESPACE_PREFIX, "sandgate-").trim();
        if (!prefix.matches("[a-z0-9]([-a-z0-9]*)?") || prefix.length() > 20) {
            throw DriverException.invalidArgument(
                    NAMESPACE_PREFIX,
                    "must be at most 20 lowercase letters, digits and '-', starting with one of them");
        }
        String mountPath = config.get(WORKSPACE_MOUNT_PATH, "/workspace").trim();
        if (!mountPath.startsWith("/") || mountPath.contains(":") || mountPath.equals("/")) {
            throw DriverException.invalidArgument(WORKSPACE_MOUNT_PATH, "must be an absolute path other than /");
        }
        Optional<String> storageClass = config.get(STORAGE_CLASS).map(String::trim);
        storageClass.ifPresent(value -> Identifiers.requireDnsLabel(STORAGE_CLASS, value, 253));
        Duration operationTimeout = config.asDuration(OPERATION_TIMEOUT, Duration.ofSeconds(90));
        Duration requestTimeout = config.asDuration(REQUEST_TIMEOUT, Duration.ofSeconds(30));
        if (operationTimeout.isNegative() || operationTimeout.isZero()) {
            throw DriverException.invalidArgument(OPERATION_TIMEOUT, "must be positive");
        }
        if (requestTimeout.isNegative() || requestTimeout.isZero()) {
            throw DriverException.invalidArgument(REQUEST_TIMEOUT, "must be positive");
        }
        return new KubernetesSettings(
                config.get(MASTER_URL).map(String::trim),
                config.get(CONTEXT).map(String::trim),
                namespaceMode(config),
                namespace,
                prefix,
                apiVersion(config),
                workspaceSize(config),
                storageClass,
                mountPath,
                networkNone(config),
                operationTimeout,
                requestTimeout);
    }

    private static NamespaceMode namespaceMode(DriverSettings config) {
        String value = config.get(NAMESPACE_MODE, "shared").trim().toLowerCase(Locale.ROOT);
        return switch (value) {
            case "shared" -> NamespaceMode.SHARED;
            case "per-workspace" -> NamespaceMode.PER_WORKSPACE;
            default ->
                throw DriverException.invalidArgument(
                        NAMESPACE_MODE, "must be shared or per-workspace, got '" + value + "'");
        };
    }

    private static Optional<SandboxApiVersion> apiVersion(DriverSettings config) {
        String value = config.get(API_VERSION, "auto").trim().toLowerCase(Locale.ROOT);
        if (value.equals("auto")) {
            return Optional.empty();
        }
        return Optional.of(SandboxApiVersion.named(value)
                .orElseThrow(() -> DriverException.invalidArgument(
                        API_VERSION, "must be auto or one of " + SandboxApiVersion.names() + ", got '" + value + "'")));
    }

    private static Quantity workspaceSize(DriverSettings config) {
        String value = config.get(WORKSPACE_SIZE, "1Gi").trim();
        try {
            Quantity quantity = Quantity.parse(value);
            if (quantity.getNumericalAmount().signum() <= 0) {
                throw DriverException.invalidArgument(WORKSPACE_SIZE, "must be positive");
            }
            return quantity;
        } catch (IllegalArgumentException | ArithmeticException e) {
            throw DriverException.invalidArgument(WORKSPACE_SIZE, "must be a Kubernetes quantity such as 1Gi");
        }
    }

    private static NetworkNoneMode networkNone(DriverSettings config) {
        String value = config.get(NETWORK_NONE, "unsupported").trim().toLowerCase(Locale.ROOT);
        return switch (value) {
            case "unsupported" -> NetworkNoneMode.UNSUPPORTED;
            case "network-policy" -> NetworkNoneMode.NETWORK_POLICY;
            default ->
                throw DriverException.invalidArgument(
                        NETWORK_NONE, "must be unsupported or network-policy, got '" + value + "'");
        };
    }
}
