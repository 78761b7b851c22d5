package dev.sandgate.driver.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.conformance.AppliedPolicy;
import dev.sandgate.driver.kubernetes.fakecluster.MockCluster;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.SandboxRef;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.SecurityContextBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What the kit's probe reads from a pod: what the node would apply, not what the pod's spec merely names. */
class KubernetesBackendProbeTest {
    @Test
    void aPrivilegedPodOnTheHostNetworkIsReportedUnrestricted() {
        // A privileged container keeps every capability and may gain privileges whatever its drop list and
        // allowPrivilegeEscalation say, and NetworkPolicies do not apply to a pod on the host's network.
        try (MockCluster cluster = MockCluster.start(List.of("v1beta1"), "v1beta1")) {
            String namespace = KitCluster.SHARED_NAMESPACE;
            var probe =
                    new KubernetesBackendProbe(cluster, true, namespace, KitCluster.NAMESPACE_PREFIX, KitCluster.IMAGE);
            SandboxRef ref = new SandboxRef(Identifiers.newSandboxId(), "kit-a", "review");
            probe.plant(ref, "review-gateway", "sha256:" + "0".repeat(64));
            KubernetesClient admin = cluster.admin();
            admin.network()
                    .networkPolicies()
                    .inNamespace(namespace)
                    .resource(SandboxManifests.denyAllNetworkPolicy(namespace))
                    .create();
            String podName = admin.pods()
                    .inNamespace(namespace)
                    .list()
                    .getItems()
                    .get(0)
                    .getMetadata()
                    .getName();
            admin.pods().inNamespace(namespace).withName(podName).edit((Pod pod) -> {
                pod.getMetadata().getLabels().put(SandboxManifests.NETWORK_LABEL, SandboxManifests.NETWORK_NONE_VALUE);
                pod.getSpec().setHostNetwork(true);
                pod.getSpec()
                        .getContainers()
                        .get(0)
                        .setSecurityContext(new SecurityContextBuilder()
                                .withPrivileged(true)
                                .withAllowPrivilegeEscalation(false)
                                .withNewCapabilities()
                                .withDrop("NET_RAW", "SYS_CHROOT")
                                .endCapabilities()
                                .build());
                return pod;
            });

            AppliedPolicy applied = probe.appliedPolicy(ref);

            assertThat(applied.staticPolicy().networkMode()).isEqualTo(NetworkMode.DEFAULT);
            assertThat(applied.staticPolicy().dropCapabilities()).isEmpty();
            assertThat(applied.staticPolicy().noNewPrivileges()).isFalse();
            probe.close();
        }
    }
}
