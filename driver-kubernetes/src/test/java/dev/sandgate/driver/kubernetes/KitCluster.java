package dev.sandgate.driver.kubernetes;

import static java.util.Objects.requireNonNull;

import dev.sandgate.driver.kubernetes.fakecluster.MockCluster;
import dev.sandgate.driver.kubernetes.fakecluster.PreconditionEnforcingDispatcher;
import dev.sandgate.driver.kubernetes.fakecluster.PreconditionEnforcingDispatcher.ReceivedRequest;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The fake cluster of one conformance kit class: started before the kit's {@code @BeforeAll} and stopped after its
 * {@code @AfterAll} (class-level extension callbacks wrap them), so the kit's own set-up and final leak check run
 * against it. When it stops, it files the requests the driver made (told apart by its User-Agent) in {@link
 * #recordedDriverRequests()}, for the RBAC test.
 */
final class KitCluster implements BeforeAllCallback, AfterAllCallback {
    static final String SHARED_NAMESPACE = "sandgate-sandboxes";
    static final String NAMESPACE_PREFIX = "sandgate-";
    static final String IMAGE = "registry.example/sandgate/sleeper:1";

    /** What each kit class that ran recorded, by class name. */
    private static final Map<String, Recording> RECORDINGS = new ConcurrentHashMap<>();

    /** The driver's requests during one kit class, and the namespace mode it ran in. */
    record Recording(boolean sharedNamespace, List<ReceivedRequest> requests) {
        Recording {
            requests = List.copyOf(requests);
        }
    }

    private final List<String> servedVersions;
    private final String activeVersion;
    private final boolean sharedNamespace;
    private volatile MockCluster cluster;

    private KitCluster(List<String> servedVersions, String activeVersion, boolean sharedNamespace) {
        this.servedVersions = List.copyOf(servedVersions);
        this.activeVersion = requireNonNull(activeVersion, "activeVersion is null");
        this.sharedNamespace = sharedNamespace;
    }

    /** A cluster serving {@code servedVersions} of the Sandbox API whose Sandboxes are {@code activeVersion}. */
    static KitCluster serving(List<String> servedVersions, String activeVersion, boolean sharedNamespace) {
        return new KitCluster(servedVersions, activeVersion, sharedNamespace);
    }

    static Map<String, Recording> recordedDriverRequests() {
        return Map.copyOf(RECORDINGS);
    }

    /**
     * Class-level callbacks are inherited by the kit's {@code @Nested} classes; only the top-level class starts and
     * stops the cluster.
     */
    private static boolean topLevel(ExtensionContext context) {
        return context.getParent().flatMap(ExtensionContext::getTestClass).isEmpty();
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        if (topLevel(context)) {
            cluster = MockCluster.start(servedVersions, activeVersion);
        }
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (!topLevel(context)) {
            return;
        }
        List<ReceivedRequest> requests = cluster.requestsFrom(KubernetesDriverProvider.USER_AGENT);
        RECORDINGS.put(context.getRequiredTestClass().getName(), new Recording(sharedNamespace, requests));
        cluster.close();
        writeReport(context.getRequiredTestClass().getSimpleName(), requests);
    }

    /**
     * Writes the driver's requests of the class to {@code target/kubernetes-driver-requests/<class>.tsv} (verb, API
     * group, resource, namespace, method, path), for whoever reviews the RBAC rules.
     */
    private static void writeReport(String testClass, List<ReceivedRequest> requests) {
        StringBuilder report = new StringBuilder("verb\tgroup\tresource\tnamespace\tmethod\tpath\n");
        for (ReceivedRequest request : requests) {
            ApiRequest parsed = ApiRequest.parse(request.method(), request.path());
            report.append(String.join(
                            "\t",
                            parsed.verb(),
                            parsed.apiGroup(),
                            parsed.qualifiedResource(),
                            parsed.namespace(),
                            request.method(),
                            request.path()))
                    .append('\n');
        }
        try {
            Path directory = Path.of("target", "kubernetes-driver-requests");
            Files.createDirectories(directory);
            Files.writeString(directory.resolve(testClass + ".tsv"), report);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    MockCluster cluster() {
        return cluster;
    }

    /**
     * The driver's settings: the mock's URL, the namespace mode, and network mode none through NetworkPolicy (the
     * gateway's default policy asks for it). The Sandbox API version is discovered, newest first.
     */
    DriverSettings driverConfig() {
        DriverSettings config = DriverSettings.EMPTY
                .with(KubernetesSettings.MASTER_URL, cluster.masterUrl())
                .with(KubernetesSettings.NETWORK_NONE, "network-policy")
                .with(KubernetesSettings.OPERATION_TIMEOUT, "30s");
        return sharedNamespace
                ? config.with(KubernetesSettings.NAMESPACE_MODE, "shared")
                        .with(KubernetesSettings.NAMESPACE, SHARED_NAMESPACE)
                : config.with(KubernetesSettings.NAMESPACE_MODE, "per-workspace")
                        .with(KubernetesSettings.NAMESPACE_PREFIX, NAMESPACE_PREFIX);
    }

    KubernetesBackendProbe probe() {
        return new KubernetesBackendProbe(cluster, sharedNamespace, SHARED_NAMESPACE, NAMESPACE_PREFIX, IMAGE);
    }

    /** A spec whose object the cluster refuses at create (422 Invalid): the backend's refusal for good. */
    static SandboxSpec refusedSpec() {
        return SandboxSpec.ofImage(PreconditionEnforcingDispatcher.REFUSED_IMAGE);
    }

    /** A sleeping container with an environment (so the driver's Secret is exercised) and modest requests. */
    static SandboxSpec runningSpec() {
        return new SandboxSpec(
                IMAGE,
                List.of("sleep"),
                List.of("infinity"),
                Map.of("SANDBOX_GREETING", "hello"),
                Map.of(),
                new ResourceRequests(64L * 1024 * 1024, 100));
    }
}
