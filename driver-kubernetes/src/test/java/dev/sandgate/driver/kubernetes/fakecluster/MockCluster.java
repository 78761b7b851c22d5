package dev.sandgate.driver.kubernetes.fakecluster;

import static java.util.Objects.requireNonNull;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.dsl.base.CustomResourceDefinitionContext;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.Context;
import java.net.InetAddress;
import java.util.HashMap;
import java.util.List;

/**
 * A fake cluster for the driver's tests: fabric8's mock API server in CRUD mode with the {@link
 * PreconditionEnforcingDispatcher}, serving the Agent Sandbox CRD at the given versions, and the {@link
 * FakeAgentSandboxController} reconciling Sandboxes of one of them.
 *
 * <p>The mock keeps each served version's objects apart (there is no conversion webhook), so a test uses one version
 * for all its Sandboxes: {@code activeVersion}, the one the controller reconciles.
 */
public final class MockCluster implements AutoCloseable {
    public static final String GROUP = "agents.x-k8s.io";
    /** User-Agent of the admin client, which tests and the probe use behind the driver's back. */
    public static final String ADMIN_USER_AGENT = "sandgate-test-admin";

    private static final String CONTROLLER_USER_AGENT = "fake-agent-sandbox-controller";

    private final KubernetesMockServer server;
    private final PreconditionEnforcingDispatcher dispatcher;
    private final KubernetesClient admin;
    private final KubernetesClient controllerClient;
    private final FakeAgentSandboxController controller;
    private final ResourceDefinitionContext sandboxes;

    private MockCluster(List<String> servedVersions, String activeVersion) {
        requireNonNull(servedVersions, "servedVersions is null");
        if (!servedVersions.contains(activeVersion)) {
            throw new IllegalArgumentException(activeVersion + " is not among the served versions " + servedVersions);
        }
        List<CustomResourceDefinitionContext> contexts = servedVersions.stream()
                .map(version -> new CustomResourceDefinitionContext.Builder()
                        .withName("sandboxes." + GROUP)
                        .withGroup(GROUP)
                        .withVersion(version)
                        .withKind("Sandbox")
                        .withPlural("sandboxes")
                        .withScope("Namespaced")
                        .withStatusSubresource(true)
                        .build())
                .toList();
        this.dispatcher = new PreconditionEnforcingDispatcher(contexts);
        this.server = new KubernetesMockServer(
                mockContext(), new FakeApiServer(dispatcher), new HashMap<>(), dispatcher, false);
        server.init(InetAddress.getLoopbackAddress(), 0);
        this.sandboxes = sandboxContext(activeVersion);
        this.admin = client(ADMIN_USER_AGENT);
        this.controllerClient = client(CONTROLLER_USER_AGENT);
        this.controller = new FakeAgentSandboxController(controllerClient, sandboxes);
        controller.start();
    }

    /**
     * The mock's serialization context, with fabric8's own JSON mapper as the mock's constructors use it (deprecated
     * for clients, but the mock has no other way to be given it).
     */
    @SuppressWarnings("deprecation")
    static Context mockContext() {
        return new Context(Serialization.jsonMapper());
    }

    /** Starts a cluster serving {@code servedVersions} of the Sandbox API, with Sandboxes of {@code activeVersion}. */
    public static MockCluster start(List<String> servedVersions, String activeVersion) {
        return new MockCluster(servedVersions, activeVersion);
    }

    public static ResourceDefinitionContext sandboxContext(String version) {
        return new ResourceDefinitionContext.Builder()
                .withGroup(GROUP)
                .withVersion(version)
                .withKind("Sandbox")
                .withPlural("sandboxes")
                .withNamespaced(true)
                .build();
    }

    /** The API server's URL, for the driver's {@code kubernetes.master-url}. */
    public String masterUrl() {
        return server.url("/");
    }

    /** A plain client, for reading and writing behind the driver's back. */
    public KubernetesClient admin() {
        return admin;
    }

    /** The Sandbox resource the fake controller reconciles. */
    public ResourceDefinitionContext sandboxes() {
        return sandboxes;
    }

    public PreconditionEnforcingDispatcher dispatcher() {
        return dispatcher;
    }

    /** Every command the fake kubelet started so far, with the UID of the pod it ran in. */
    public List<FakeKubelet.Ran> commandsRun() {
        return dispatcher.kubelet().ran();
    }

    /** The paths touched so far in the container of the pod with {@code uid}, while the pod exists. */
    public java.util.Set<String> filesIn(String podUid) {
        return dispatcher.kubelet().files(podUid);
    }

    /** The UIDs of the pods whose log the fake kubelet served so far. */
    public List<String> logsServed() {
        return dispatcher.kubelet().logsServed();
    }

    /** Every request received so far whose User-Agent is {@code userAgent}. */
    public List<PreconditionEnforcingDispatcher.ReceivedRequest> requestsFrom(String userAgent) {
        return dispatcher.received().stream()
                .filter(request -> request.userAgent().startsWith(userAgent))
                .toList();
    }

    /** A new client of the cluster with its own User-Agent. */
    public KubernetesClient client(String userAgent) {
        Config config = new ConfigBuilder(Config.empty())
                .withMasterUrl(masterUrl())
                .withNamespace("default")
                .withUserAgent(userAgent)
                .build();
        return new KubernetesClientBuilder().withConfig(config).build();
    }

    @Override
    public void close() {
        controller.close();
        controllerClient.close();
        admin.close();
        server.destroy();
    }
}
