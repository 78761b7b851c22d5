package dev.sandgate.driver.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sandgate.driver.kubernetes.fakecluster.MockCluster;
import dev.sandgate.spi.Availability;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Finding the Sandbox API: newest served version first, a pinned version only if served, a clear reason if none. */
class KubernetesDriverProviderTest {
    private static MockCluster olderRelease;

    @BeforeAll
    static void startCluster() {
        olderRelease = MockCluster.start(List.of("v1alpha1"), "v1alpha1");
    }

    @AfterAll
    static void stopCluster() {
        olderRelease.close();
    }

    private static DriverSettings config() {
        return DriverSettings.EMPTY.with(KubernetesSettings.MASTER_URL, olderRelease.masterUrl());
    }

    @Test
    void availabilityNamesTheVersionItWouldUse() {
        Availability availability = new KubernetesDriverProvider().availability(config());

        assertThat(availability.available()).isTrue();
        assertThat(availability.reason()).contains("agents.x-k8s.io/v1alpha1");
    }

    @Test
    void aPinnedVersionTheClusterDoesNotServeIsUnavailableWithTheReason() {
        DriverSettings pinned = config().with(KubernetesSettings.API_VERSION, "v1beta1");

        Availability availability = new KubernetesDriverProvider().availability(pinned);
        DriverException refused = catchThrowableOfType(
                DriverException.class, () -> new KubernetesDriverProvider().create(pinned, DriverContext.of("pinned")));

        assertThat(availability.available()).isFalse();
        assertThat(availability.reason()).contains("agents.x-k8s.io/v1beta1").contains("install the Agent Sandbox");
        assertThat(refused.code()).isEqualTo(DriverErrorCode.UNAVAILABLE);
    }

    @Test
    void anUnreachableApiServerIsUnavailableNotAnException() {
        DriverSettings nowhere = DriverSettings.EMPTY
                .with(KubernetesSettings.MASTER_URL, "http://127.0.0.1:1")
                .with(KubernetesSettings.REQUEST_TIMEOUT, "2s");

        Availability availability = new KubernetesDriverProvider().availability(nowhere);

        assertThat(availability.available()).isFalse();
    }

    @Test
    void badSettingsAreUnavailableNamingTheKey() {
        Availability availability = new KubernetesDriverProvider()
                .availability(config().with(KubernetesSettings.NAMESPACE_MODE, "sometimes"));

        assertThat(availability.available()).isFalse();
        assertThat(availability.reason()).startsWith(KubernetesSettings.NAMESPACE_MODE);
    }
}
