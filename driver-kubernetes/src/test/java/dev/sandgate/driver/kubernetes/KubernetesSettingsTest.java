package dev.sandgate.driver.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sandgate.driver.kubernetes.KubernetesSettings.NamespaceMode;
import dev.sandgate.driver.kubernetes.KubernetesSettings.NetworkNoneMode;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class KubernetesSettingsTest {
    @Test
    void defaultsAreASharedNamespaceTheNewestApiVersionAndNoNetworkModeNone() {
        KubernetesSettings settings = KubernetesSettings.from(DriverSettings.EMPTY);

        assertThat(settings.namespaceMode()).isEqualTo(NamespaceMode.SHARED);
        assertThat(settings.namespace()).isEmpty();
        assertThat(settings.apiVersion()).isEmpty();
        assertThat(settings.networkNone()).isEqualTo(NetworkNoneMode.UNSUPPORTED);
        assertThat(settings.workspaceSize().toString()).isEqualTo("1Gi");
        assertThat(settings.workspaceMountPath()).isEqualTo("/workspace");
        assertThat(settings.operationTimeout()).isEqualTo(Duration.ofSeconds(90));
    }

    @Test
    void everySettingIsRead() {
        KubernetesSettings settings = KubernetesSettings.from(DriverSettings.EMPTY
                .with("kubernetes.master-url", "https://127.0.0.1:6443")
                .with("kubernetes.namespace-mode", "per-workspace")
                .with("kubernetes.namespace-prefix", "sg-")
                .with("kubernetes.sandbox-api-version", "v1alpha1")
                .with("kubernetes.workspace-size", "5Gi")
                .with("kubernetes.storage-class", "fast")
                .with("kubernetes.workspace-mount-path", "/home/agent")
                .with("kubernetes.network-none", "network-policy")
                .with("kubernetes.operation-timeout", "90s")
                .with("kubernetes.request-timeout", "5s"));

        assertThat(settings.masterUrl()).contains("https://127.0.0.1:6443");
        assertThat(settings.namespaceMode()).isEqualTo(NamespaceMode.PER_WORKSPACE);
        assertThat(settings.namespacePrefix()).isEqualTo("sg-");
        assertThat(settings.apiVersion()).contains(SandboxApiVersion.V1ALPHA1);
        assertThat(settings.workspaceSize().toString()).isEqualTo("5Gi");
        assertThat(settings.storageClass()).isEqualTo(Optional.of("fast"));
        assertThat(settings.workspaceMountPath()).isEqualTo("/home/agent");
        assertThat(settings.networkNone()).isEqualTo(NetworkNoneMode.NETWORK_POLICY);
        assertThat(settings.operationTimeout()).isEqualTo(Duration.ofSeconds(90));
        assertThat(settings.requestTimeout()).isEqualTo(Duration.ofSeconds(5));
    }

    @ParameterizedTest
    @CsvSource({
        "kubernetes.namespace-mode, everywhere",
        "kubernetes.namespace, Not_A_Label",
        "kubernetes.namespace-prefix, UPPER-",
        "kubernetes.sandbox-api-version, v2",
        "kubernetes.workspace-size, lots",
        "kubernetes.workspace-size, 0",
        "kubernetes.workspace-mount-path, relative/path",
        "kubernetes.network-none, firewall",
        "kubernetes.operation-timeout, soon",
    })
    void aBadSettingIsAnInvalidArgumentNamingItsKey(String key, String value) {
        DriverException refused = catchThrowableOfType(
                DriverException.class, () -> KubernetesSettings.from(DriverSettings.EMPTY.with(key, value)));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(refused.getMessage()).startsWith(key + ":");
    }

    @Test
    void aMisspeltSettingIsRefusedInsteadOfIgnored() {
        DriverException refused = catchThrowableOfType(
                DriverException.class,
                () -> KubernetesSettings.from(DriverSettings.EMPTY.with("kubernetes.namspace", "agents")));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(refused.getMessage()).startsWith("kubernetes.namspace: is not a setting of this driver");
    }
}
