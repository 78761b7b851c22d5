package dev.sandgate.driver.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.ComputeDriverConformanceTest;
import dev.sandgate.conformance.LaunchPolicies;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.Labels;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The conformance kit with a namespace per workspace ({@code kubernetes.namespace-mode=per-workspace}), against a
 * cluster serving v1beta1 and v1alpha1.
 */
@Order(3)
class KubernetesPerWorkspaceConformanceTest extends ComputeDriverConformanceTest {
    @RegisterExtension
    static final KitCluster CLUSTER = KitCluster.serving(List.of("v1beta1", "v1alpha1"), "v1beta1", false);

    @Override
    protected ComputeDriverProvider provider() {
        return new KubernetesDriverProvider();
    }

    @Override
    protected DriverSettings config() {
        return CLUSTER.driverConfig();
    }

    @Override
    protected BackendProbe probe() {
        return CLUSTER.probe();
    }

    @Override
    protected SandboxSpec runningSpec() {
        return KitCluster.runningSpec();
    }

    @Override
    protected SandboxSpec permanentlyRefusedSpec() {
        return KitCluster.refusedSpec();
    }

    @Override
    protected Duration readinessTimeout() {
        return Duration.ofSeconds(30);
    }

    @Test
    void aSandboxLivesInItsWorkspacesNamespace() {
        var ref = new SandboxRef(Identifiers.newSandboxId(), "team-blue", "notebook");
        var launch = new LaunchInput(1, LaunchPolicies.of(1, LaunchPolicies.unrestricted(), DynamicPolicy.EMPTY));
        KubernetesClient admin = CLUSTER.cluster().admin();
        try (ComputeDriver driver = provider().create(config(), DriverContext.of("kit-namespaces"))) {
            driver.create(ref, runningSpec(), launch);
            try {
                GenericKubernetesResource sandbox = admin.genericKubernetesResources(
                                CLUSTER.cluster().sandboxes())
                        .inNamespace("sandgate-team-blue")
                        .withName("notebook")
                        .get();
                assertThat(sandbox.getMetadata().getLabels()).containsEntry(Labels.SANDBOX_ID, ref.id());
                assertThat(admin.namespaces()
                                .withName("sandgate-team-blue")
                                .get()
                                .getMetadata()
                                .getLabels())
                        .containsEntry(Labels.MANAGED_BY, Labels.MANAGED_BY_VALUE);
            } finally {
                assertThat(driver.delete(ref, OptionalLong.empty()).deleted()).isTrue();
            }
        }
    }
}
