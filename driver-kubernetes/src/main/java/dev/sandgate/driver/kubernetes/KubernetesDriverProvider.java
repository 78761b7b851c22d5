package dev.sandgate.driver.kubernetes;

import dev.sandgate.spi.Availability;
import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import io.fabric8.kubernetes.api.model.APIResourceList;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The Kubernetes driver's {@link java.util.ServiceLoader} entry: sandboxes as Agent Sandbox custom resources
 * ({@code agents.x-k8s.io}). See docs/drivers/kubernetes.md.
 */
public final class KubernetesDriverProvider implements ComputeDriverProvider {
    /** The User-Agent of every request the driver sends; it tells the driver's requests apart in audit logs. */
    public static final String USER_AGENT = "sandgate-driver-kubernetes";

    private static final int REQUEST_RETRIES = 3;

    @Override
    public String name() {
        return "kubernetes";
    }

    /** Below the local engines: a gateway in a cluster names this driver (driver=kubernetes). */
    @Override
    public int priority() {
        return 5;
    }

    @Override
    public Availability availability(DriverSettings config) {
        try {
            KubernetesSettings settings = KubernetesSettings.from(config);
            try (KubernetesClient client = newClient(settings, 0)) {
                SandboxApiVersion version = discover(client, settings);
                return Availability.available(
                        "Agent Sandbox API " + version.apiVersion() + " at " + client.getMasterUrl());
            }
        } catch (DriverException e) {
            return Availability.unavailable(e.getMessage());
        } catch (KubernetesClientException e) {
            return Availability.unavailable("cannot reach the Kubernetes API: " + KubernetesErrors.message(e));
        }
    }

    @Override
    public ComputeDriver create(DriverSettings config, DriverContext context) {
        Objects.requireNonNull(config, "config is null");
        Objects.requireNonNull(context, "context is null");
        KubernetesSettings settings = KubernetesSettings.from(config);
        KubernetesClient client = newClient(settings, REQUEST_RETRIES);
        try {
            return new KubernetesDriver(client, settings, context, discover(client, settings));
        } catch (RuntimeException e) {
            client.close();
            throw e;
        }
    }

    /**
     * A client of the configured cluster. {@code retries} bounds fabric8's retries of a request that could not be sent
     * or got a 5xx answer (with exponential back-off): a few for the driver, none for the availability check.
     */
    static KubernetesClient newClient(KubernetesSettings settings, int retries) {
        Config base;
        try {
            base = settings.masterUrl().isPresent()
                    ? new ConfigBuilder(Config.empty())
                            .withMasterUrl(settings.masterUrl().get())
                            .build()
                    : Config.autoConfigure(settings.kubeconfigContext().orElse(null));
        } catch (KubernetesClientException | IllegalArgumentException e) {
            throw new DriverException(
                    DriverErrorCode.INVALID_ARGUMENT, "cannot configure the Kubernetes client: " + e.getMessage(), e);
        }
        Config config = new ConfigBuilder(base)
                .withUserAgent(USER_AGENT)
                .withRequestTimeout(Math.toIntExact(settings.requestTimeout().toMillis()))
                .withRequestRetryBackoffLimit(retries)
                .build();
        return new KubernetesClientBuilder().withConfig(config).build();
    }

    /**
     * The newest Sandbox API version the cluster serves among those this driver speaks (or the configured one, which
     * must be served). A served version answers its discovery document with the {@code sandboxes} resource.
     */
    static SandboxApiVersion discover(KubernetesClient client, KubernetesSettings settings) {
        List<SandboxApiVersion> candidates =
                settings.apiVersion().map(List::of).orElse(List.of(SandboxApiVersion.values()));
        List<String> tried = new ArrayList<>();
        for (SandboxApiVersion candidate : candidates) {
            tried.add(candidate.apiVersion());
            APIResourceList resources;
            try {
                resources = client.getApiResources(candidate.apiVersion());
            } catch (KubernetesClientException e) {
                if (e.getCode() == KubernetesErrors.NOT_FOUND) {
                    continue;
                }
                throw KubernetesErrors.translate("discover " + candidate.apiVersion(), e);
            }
            if (resources != null
                    && resources.getResources() != null
                    && resources.getResources().stream()
                            .anyMatch(resource -> SandboxApiVersion.PLURAL.equals(resource.getName()))) {
                return candidate;
            }
        }
        throw new DriverException(
                DriverErrorCode.UNAVAILABLE,
                "the cluster serves no Sandbox API this driver speaks (tried " + String.join(", ", tried)
                        + "); install the Agent Sandbox CRDs and controller (docs/drivers/kubernetes.md)");
    }
}
