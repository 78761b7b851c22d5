package dev.sandgate.driver.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.ComputeDriverConformanceTest;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxSpec;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The conformance kit against a cluster of an Agent Sandbox release before v1beta1, which serves only v1alpha1 (stop
 * and start through {@code spec.replicas}), in one shared namespace: the driver falls back to v1alpha1.
 */
@Order(2)
class KubernetesV1alpha1ConformanceTest extends ComputeDriverConformanceTest {
    @RegisterExtension
    static final KitCluster CLUSTER = KitCluster.serving(List.of("v1alpha1"), "v1alpha1", true);

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
    void theDriverFallsBackToV1alpha1WhereV1beta1IsNotServed() {
        try (var driver = (KubernetesDriver) provider().create(config(), DriverContext.of("version-check"))) {
            assertThat(driver.apiVersion()).isEqualTo(SandboxApiVersion.V1ALPHA1);
        }
    }
}
