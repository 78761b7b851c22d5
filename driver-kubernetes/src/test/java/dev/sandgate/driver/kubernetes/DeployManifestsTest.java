package dev.sandgate.driver.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.driver.kubernetes.fakecluster.PreconditionEnforcingDispatcher.ReceivedRequest;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.fabric8.kubernetes.api.model.rbac.RoleRef;
import io.fabric8.kubernetes.api.model.rbac.Subject;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.io.IOException;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;

/**
 * Parses the manifests in {@code deploy/kubernetes} and holds them to what the driver did during the conformance kit:
 * every request it sent to the (fake) API server is granted by the shipped Role or ClusterRole, and every rule they
 * grant was used. It runs after the kit classes (see junit-platform.properties), which record the driver's requests.
 */
@Order(Integer.MAX_VALUE)
class DeployManifestsTest {
    private static final Path DEPLOY = Path.of(System.getProperty("sandgate.deployDir", "../deploy/kubernetes"));
    private static final Set<String> SHARED_KITS =
            Set.of(KubernetesV1beta1ConformanceTest.class.getName(), KubernetesV1alpha1ConformanceTest.class.getName());
    private static final Set<String> PER_WORKSPACE_KITS = Set.of(KubernetesPerWorkspaceConformanceTest.class.getName());
    /** Discovery of the Sandbox API versions, granted to every authenticated user by the system:discovery role. */
    private static final Pattern DISCOVERY = Pattern.compile("/apis/agents\\.x-k8s\\.io/v[0-9a-z]+");

    private static List<HasMetadata> manifests(String directory) {
        try (Stream<Path> files = Files.list(DEPLOY.resolve(directory))) {
            List<HasMetadata> manifests = new ArrayList<>();
            for (Path file : files.filter(path -> path.toString().endsWith(".yaml"))
                    .sorted()
                    .toList()) {
                if (!file.getFileName().toString().equals("kustomization.yaml")) {
                    manifests.add(Serialization.unmarshal(Files.readString(file), HasMetadata.class));
                }
            }
            return manifests;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The manifests an overlay applies: the base's and its own. */
    private static List<HasMetadata> installation(String overlay) {
        List<HasMetadata> all = new ArrayList<>(manifests("base"));
        all.addAll(manifests(overlay));
        return all;
    }

    private static <T extends HasMetadata> T only(List<HasMetadata> manifests, Class<T> type) {
        List<T> found =
                manifests.stream().filter(type::isInstance).map(type::cast).toList();
        assertThat(found).as("%s manifests", type.getSimpleName()).hasSize(1);
        return found.get(0);
    }

    private static List<ApiRequest> requestsOf(Set<String> kitClasses) {
        Map<String, KitCluster.Recording> recordings = KitCluster.recordedDriverRequests();
        assertThat(recordings.keySet())
                .as("the kit classes must run before this test, in the same run (./mvnw -pl driver-kubernetes"
                        + " install runs them all, in order)")
                .containsAll(kitClasses);
        List<ApiRequest> requests = new ArrayList<>();
        for (String kitClass : kitClasses) {
            for (ReceivedRequest request : recordings.get(kitClass).requests()) {
                requests.add(ApiRequest.parse(request.method(), request.path()));
            }
        }
        assertThat(requests).as("the driver's requests during the kit").isNotEmpty();
        return requests;
    }

    /** A rule grants a request if group, resource and verb match; a Role's only in its own namespace. */
    private static boolean grants(PolicyRule rule, ApiRequest request) {
        return rule.getApiGroups().contains(request.apiGroup())
                && rule.getResources().contains(request.qualifiedResource())
                && rule.getVerbs().contains(request.verb())
                && (rule.getResourceNames() == null || rule.getResourceNames().isEmpty());
    }

    /** Every (group, resource, verb) a rule set grants, e.g. {@code agents.x-k8s.io sandboxes patch}. */
    private static Set<String> permissions(List<PolicyRule> rules) {
        Set<String> permissions = new TreeSet<>();
        for (PolicyRule rule : rules) {
            for (String group : rule.getApiGroups()) {
                for (String resource : rule.getResources()) {
                    for (String verb : rule.getVerbs()) {
                        permissions.add(permission(group, resource, verb));
                    }
                }
            }
        }
        return permissions;
    }

    private static String permission(String group, String resource, String verb) {
        return (group.isEmpty() ? "core" : group) + " " + resource + " " + verb;
    }

    private static Set<String> used(List<ApiRequest> requests) {
        Set<String> used = new TreeSet<>();
        requests.stream()
                .filter(ApiRequest::isResourceRequest)
                .forEach(request ->
                        used.add(permission(request.apiGroup(), request.qualifiedResource(), request.verb())));
        return used;
    }

    private static void assertNoWildcards(List<PolicyRule> rules) {
        for (PolicyRule rule : rules) {
            assertThat(rule.getApiGroups()).doesNotContain("*");
            assertThat(rule.getResources()).doesNotContain("*").noneMatch(resource -> resource.endsWith("/*"));
            assertThat(rule.getVerbs()).doesNotContain("*");
            assertThat(rule.getNonResourceURLs()).as("non-resource URLs").isNullOrEmpty();
        }
    }

    private static void assertOnlyDiscoveryOutsideResources(List<ApiRequest> requests) {
        assertThat(requests)
                .filteredOn(request -> !request.isResourceRequest())
                .as("requests that are not for a resource must be discovery of the Sandbox API (system:discovery)")
                .allSatisfy(request -> {
                    assertThat(request.verb()).isEqualTo("get");
                    assertThat(request.path()).matches(DISCOVERY);
                });
    }

    private static Container gatewayContainer(Deployment deployment) {
        List<Container> containers =
                deployment.getSpec().getTemplate().getSpec().getContainers();
        assertThat(containers).hasSize(1);
        return containers.get(0);
    }

    private static String env(Container container, String name) {
        return container.getEnv().stream()
                .filter(variable -> variable.getName().equals(name))
                .map(EnvVar::getValue)
                .findFirst()
                .orElseThrow(() -> new AssertionError("the gateway container sets no " + name));
    }

    private static Properties gatewayProperties(List<HasMetadata> installation) {
        ConfigMap config = only(installation, ConfigMap.class);
        assertThat(config.getMetadata().getName()).isEqualTo("sandgate-gateway-config");
        Properties properties = new Properties();
        try {
            properties.load(new StringReader(config.getData().get("gateway.properties")));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return properties;
    }

    @Nested
    class SharedNamespace {
        private final List<HasMetadata> installation = installation("shared-namespace");
        private final Role role = only(installation, Role.class);

        @Test
        void theRoleGrantsEveryRequestTheDriverMadeDuringTheKit() {
            List<ApiRequest> requests = requestsOf(SHARED_KITS);
            assertOnlyDiscoveryOutsideResources(requests);

            assertThat(requests).filteredOn(ApiRequest::isResourceRequest).allSatisfy(request -> {
                assertThat(request.namespace())
                        .as("%s %s is inside the Role's namespace", request.verb(), request.path())
                        .isEqualTo(role.getMetadata().getNamespace());
                assertThat(role.getRules())
                        .as("a rule of the Role grants %s %s", request.verb(), request.path())
                        .anyMatch(rule -> grants(rule, request));
            });
        }

        @Test
        void theRoleGrantsNothingTheDriverDidNotUse() {
            assertThat(permissions(role.getRules())).isEqualTo(used(requestsOf(SHARED_KITS)));
        }

        @Test
        void theRoleUsesNoWildcards() {
            assertNoWildcards(role.getRules());
        }

        @Test
        void theRoleIsBoundToTheGatewaysServiceAccountInTheSandboxNamespace() {
            RoleBinding binding = only(installation, RoleBinding.class);
            ServiceAccount account = only(installation, ServiceAccount.class);
            Deployment deployment = only(installation, Deployment.class);

            assertThat(binding.getMetadata().getNamespace())
                    .isEqualTo(role.getMetadata().getNamespace());
            assertThat(binding.getRoleRef())
                    .extracting(RoleRef::getKind, RoleRef::getName)
                    .containsExactly("Role", role.getMetadata().getName());
            assertThat(binding.getSubjects())
                    .extracting(Subject::getKind, Subject::getName, Subject::getNamespace)
                    .containsExactly(org.assertj.core.groups.Tuple.tuple(
                            "ServiceAccount",
                            account.getMetadata().getName(),
                            account.getMetadata().getNamespace()));
            assertThat(deployment.getSpec().getTemplate().getSpec().getServiceAccountName())
                    .isEqualTo(account.getMetadata().getName());
        }

        @Test
        void theGatewayIsConfiguredAsTheKitRanTheDriver() {
            Properties properties = gatewayProperties(installation);

            assertThat(properties.getProperty("driver")).isEqualTo("kubernetes");
            assertThat(properties.getProperty(KubernetesSettings.NAMESPACE_MODE))
                    .isEqualTo("shared");
            assertThat(properties.getProperty(KubernetesSettings.NAMESPACE))
                    .isEqualTo(role.getMetadata().getNamespace())
                    .isEqualTo(KitCluster.SHARED_NAMESPACE);
            assertThat(properties.getProperty(KubernetesSettings.NETWORK_NONE)).isEqualTo("network-policy");
        }
    }

    @Nested
    class PerWorkspace {
        private final List<HasMetadata> installation = installation("per-workspace");
        private final ClusterRole role = only(installation, ClusterRole.class);

        @Test
        void theClusterRoleGrantsEveryRequestTheDriverMadeDuringTheKit() {
            List<ApiRequest> requests = requestsOf(PER_WORKSPACE_KITS);
            assertOnlyDiscoveryOutsideResources(requests);

            assertThat(requests)
                    .filteredOn(ApiRequest::isResourceRequest)
                    .allSatisfy(request -> assertThat(role.getRules())
                            .as("a rule of the ClusterRole grants %s %s", request.verb(), request.path())
                            .anyMatch(rule -> grants(rule, request)));
        }

        @Test
        void theClusterRoleGrantsNothingTheDriverDidNotUse() {
            assertThat(permissions(role.getRules())).isEqualTo(used(requestsOf(PER_WORKSPACE_KITS)));
        }

        @Test
        void theClusterRoleUsesNoWildcards() {
            assertNoWildcards(role.getRules());
        }

        @Test
        void theClusterRoleIsBoundToTheGatewaysServiceAccount() {
            ClusterRoleBinding binding = only(installation, ClusterRoleBinding.class);
            ServiceAccount account = only(installation, ServiceAccount.class);

            assertThat(binding.getRoleRef())
                    .extracting(RoleRef::getKind, RoleRef::getName)
                    .containsExactly("ClusterRole", role.getMetadata().getName());
            assertThat(binding.getSubjects())
                    .extracting(Subject::getKind, Subject::getName, Subject::getNamespace)
                    .containsExactly(org.assertj.core.groups.Tuple.tuple(
                            "ServiceAccount",
                            account.getMetadata().getName(),
                            account.getMetadata().getNamespace()));
        }

        @Test
        void theGatewayIsConfiguredAsTheKitRanTheDriver() {
            Properties properties = gatewayProperties(installation);

            assertThat(properties.getProperty("driver")).isEqualTo("kubernetes");
            assertThat(properties.getProperty(KubernetesSettings.NAMESPACE_MODE))
                    .isEqualTo("per-workspace");
            assertThat(properties.getProperty(KubernetesSettings.NAMESPACE_PREFIX))
                    .isEqualTo(KitCluster.NAMESPACE_PREFIX);
            assertThat(properties.getProperty(KubernetesSettings.NETWORK_NONE)).isEqualTo("network-policy");
        }
    }

    @Nested
    class Gateway {
        private final List<HasMetadata> base = manifests("base");
        private final Deployment deployment = only(base, Deployment.class);
        private final Container container = gatewayContainer(deployment);

        @Test
        void everyKustomizationListsEveryManifestOfItsDirectory() throws IOException {
            for (String directory : List.of("base", "shared-namespace", "per-workspace")) {
                Set<String> files = new TreeSet<>();
                try (Stream<Path> list = Files.list(DEPLOY.resolve(directory))) {
                    list.map(path -> path.getFileName().toString())
                            .filter(name -> name.endsWith(".yaml") && !name.equals("kustomization.yaml"))
                            .forEach(files::add);
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> kustomization = Serialization.unmarshal(
                        Files.readString(DEPLOY.resolve(directory).resolve("kustomization.yaml")), Map.class);
                @SuppressWarnings("unchecked")
                Set<String> listed = new TreeSet<>((List<String>) kustomization.get("resources"));
                listed.remove("../base");
                assertThat(listed)
                        .as("resources of %s/kustomization.yaml", directory)
                        .isEqualTo(files);
            }
        }

        @Test
        void oneReplicaIsReplacedByRecreatingIt() {
            assertThat(deployment.getSpec().getReplicas()).isEqualTo(1);
            assertThat(deployment.getSpec().getStrategy().getType()).isEqualTo("Recreate");
        }

        @Test
        void probesCheckTheGatewayPortAndReadinessTheEngine() {
            int port = Integer.parseInt(env(container, "SANDGATE_LISTEN").replaceAll(".*:", ""));
            assertThat(container.getPorts().get(0).getContainerPort()).isEqualTo(port);
            for (Probe probe : List.of(container.getStartupProbe(), container.getLivenessProbe())) {
                // TCP: the port serves TLS, which the kubelet's gRPC probes cannot speak.
                assertThat(probe.getTcpSocket()).isNotNull();
                assertThat(probe.getTcpSocket().getPort().getIntVal()).isEqualTo(port);
            }
            // Readiness follows the driver's engine: /readyz on the metrics port (plain HTTP) answers it.
            int metricsPort =
                    Integer.parseInt(env(container, "SANDGATE_METRICS_LISTEN").replaceAll(".*:", ""));
            Probe readiness = container.getReadinessProbe();
            assertThat(readiness.getHttpGet()).isNotNull();
            assertThat(readiness.getHttpGet().getPath()).isEqualTo("/readyz");
            assertThat(container.getPorts()).anySatisfy(p -> {
                assertThat(p.getName())
                        .isEqualTo(readiness.getHttpGet().getPort().getStrVal());
                assertThat(p.getContainerPort()).isEqualTo(metricsPort);
            });
            Service service = only(base, Service.class);
            assertThat(service.getSpec().getSelector())
                    .isEqualTo(deployment.getSpec().getSelector().getMatchLabels());
            assertThat(service.getSpec().getPorts().get(0)).satisfies(servicePort -> {
                assertThat(servicePort.getPort()).isEqualTo(port);
                assertThat(servicePort.getTargetPort().getStrVal())
                        .isEqualTo(container.getPorts().get(0).getName());
            });
        }

        @Test
        void metricsAreServedOnTheirOwnPortThatThePodAnnotationsName() {
            int metrics =
                    Integer.parseInt(env(container, "SANDGATE_METRICS_LISTEN").replaceAll(".*:", ""));
            assertThat(container.getPorts())
                    .extracting(ContainerPort::getName, ContainerPort::getContainerPort)
                    .containsExactly(
                            org.assertj.core.groups.Tuple.tuple(
                                    "grpc",
                                    Integer.parseInt(
                                            env(container, "SANDGATE_LISTEN").replaceAll(".*:", ""))),
                            org.assertj.core.groups.Tuple.tuple("metrics", metrics));
            assertThat(deployment.getSpec().getTemplate().getMetadata().getAnnotations())
                    .containsEntry("prometheus.io/scrape", "true")
                    .containsEntry("prometheus.io/port", Integer.toString(metrics))
                    .containsEntry("prometheus.io/path", "/metrics");
        }

        @Test
        void theStoreLivesOnAPersistentVolumeAndTheTokenKeyComesFromASecret() {
            PodSpec pod = deployment.getSpec().getTemplate().getSpec();
            Volume data = volumeMountedAt(pod, env(container, "SANDGATE_DATA_DIR"));
            assertThat(data.getPersistentVolumeClaim().getClaimName()).isEqualTo("sandgate-data");
            assertThat(base)
                    .anyMatch(manifest -> manifest.getKind().equals("PersistentVolumeClaim")
                            && manifest.getMetadata().getName().equals("sandgate-data"));

            Path tokenKeyFile = Path.of(env(container, "SANDGATE_TOKEN_KEY_FILE"));
            Volume tokenKey = volumeMountedAt(pod, tokenKeyFile.getParent().toString());
            assertThat(tokenKey.getSecret().getSecretName()).isEqualTo("sandgate-token-key");
            assertThat(tokenKey.getSecret().getItems())
                    .singleElement()
                    .satisfies(item -> assertThat(item.getPath())
                            .isEqualTo(tokenKeyFile.getFileName().toString()));
        }

        private Volume volumeMountedAt(PodSpec pod, String path) {
            VolumeMount mount = container.getVolumeMounts().stream()
                    .filter(candidate -> candidate.getMountPath().equals(path))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("nothing is mounted at " + path));
            return pod.getVolumes().stream()
                    .filter(volume -> volume.getName().equals(mount.getName()))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("no volume " + mount.getName()));
        }

        @Test
        void theGatewayRunsWithLeastPrivilege() {
            var pod = deployment.getSpec().getTemplate().getSpec().getSecurityContext();
            assertThat(pod.getRunAsNonRoot()).isTrue();
            assertThat(pod.getSeccompProfile().getType()).isEqualTo("RuntimeDefault");
            var own = container.getSecurityContext();
            assertThat(own.getRunAsNonRoot()).isTrue();
            assertThat(own.getReadOnlyRootFilesystem()).isTrue();
            assertThat(own.getAllowPrivilegeEscalation()).isFalse();
            assertThat(own.getPrivileged()).isNotEqualTo(true);
            assertThat(own.getCapabilities().getDrop()).containsExactly("ALL");
            assertThat(own.getCapabilities().getAdd()).isNullOrEmpty();
            assertThat(container.getResources().getLimits()).containsKey("memory");
            Set<String> writable = new LinkedHashSet<>();
            container.getVolumeMounts().stream()
                    .filter(mount -> !Boolean.TRUE.equals(mount.getReadOnly()))
                    .forEach(mount -> writable.add(mount.getMountPath()));
            assertThat(writable)
                    .as("the only writable paths: the store and /tmp")
                    .containsExactlyInAnyOrder(env(container, "SANDGATE_DATA_DIR"), "/tmp");
        }
    }
}
