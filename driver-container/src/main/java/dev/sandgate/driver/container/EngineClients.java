package dev.sandgate.driver.container;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import java.time.Duration;
import java.util.Optional;

/** Builds docker-java clients (httpclient5 transport) for an engine's API socket. */
public final class EngineClients {
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);

    private EngineClients() {}

    /**
     * A client for request/response calls: a request whose answer stays silent for longer than {@code
     * responseTimeout} fails. Pass {@code null} for streams that may stay silent indefinitely (events).
     */
    public static DockerClient connect(ContainerDriverSettings settings, Duration responseTimeout) {
        return connect(settings.host().toString(), settings.apiVersion(), settings.tlsCertPath(), responseTimeout);
    }

    /** A client for {@code host} (e.g. {@code unix:///run/docker.sock}) speaking {@code apiVersion}. */
    public static DockerClient connect(
            String host, String apiVersion, Optional<String> tlsCertPath, Duration responseTimeout) {
        DefaultDockerClientConfig.Builder builder = DefaultDockerClientConfig.createDefaultConfigBuilder()
                .withDockerHost(host)
                .withApiVersion(apiVersion)
                .withDockerTlsVerify(tlsCertPath.isPresent());
        tlsCertPath.ifPresent(builder::withDockerCertPath);
        DockerClientConfig config = builder.build();
        ApacheDockerHttpClient.Builder http = new ApacheDockerHttpClient.Builder()
                .dockerHost(config.getDockerHost())
                .sslConfig(config.getSSLConfig())
                .maxConnections(64)
                .connectionTimeout(CONNECT_TIMEOUT);
        if (responseTimeout != null) {
            http.responseTimeout(responseTimeout);
        }
        return DockerClientImpl.getInstance(config, http.build());
    }
}
