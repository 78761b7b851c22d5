package dev.sandgate.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CertificateRotationTest {
    @Test
    @DisplayName("a server certificate replaced on disk is served by the running gateway")
    void rotatedServerCertificateIsPickedUp(@TempDir Path dir) throws Exception {
        try (SecureGateway gateway = SecureGateway.start(dir)) {
            assertThat(servedCommonName(gateway)).isEqualTo("CN=gateway-1");

            gateway.pki.server("gateway-2").write(gateway.pkiDir(), "server");

            await().atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> servedCommonName(gateway).equals("CN=gateway-2"));
        }
    }

    /** The subject of the certificate a fresh TLS handshake with the gateway presents. */
    private static String servedCommonName(SecureGateway gateway) throws Exception {
        KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
        trust.load(null, null);
        trust.setCertificateEntry("ca", gateway.pki.ca().certificate());
        TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        factory.init(trust);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, factory.getTrustManagers(), null);
        try (SSLSocket socket = (SSLSocket) context.getSocketFactory().createSocket("127.0.0.1", gateway.port())) {
            socket.setSSLParameters(socket.getSSLParameters());
            socket.startHandshake();
            X509Certificate served = (X509Certificate) socket.getSession().getPeerCertificates()[0];
            return served.getSubjectX500Principal().getName();
        }
    }
}
