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
 * The conformance kit against a cluster serving the current Agent Sandbox release's versions (v1beta1 and the
 * deprecated v1alpha1), in one shared namespace: the driver picks v1beta1, the newest.
 */
@Order(1)
class KubernetesV1beta1ConformanceTest extends ComputeDriverConformanceTest {
    @RegisterExtension
    static final KitCluster CLUSTER = KitCluster.serving(List.of("v1beta1", "v1alpha1"), "v1beta1", true);

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
    void theDriverSpeaksTheNewestServedVersion() {
        try (var driver = (KubernetesDriver) provider().create(config(), DriverContext.of("version-check"))) {
            assertThat(driver.apiVersion()).isEqualTo(SandboxApiVersion.V1BETA1);
        }
    }
}
