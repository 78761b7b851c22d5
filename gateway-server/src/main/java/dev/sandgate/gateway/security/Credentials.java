package dev.sandgate.gateway.security;

import java.security.cert.X509Certificate;
import java.util.Optional;

/**
 * What a call presented: the client certificate the TLS handshake verified, and the bearer value of its
 * {@code authorization} header.
 */
record Credentials(Optional<X509Certificate> clientCertificate, Optional<String> bearer) {}
