package dev.sandgate.gateway.security;

import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import javax.naming.InvalidNameException;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;

/**
 * A client certificate that the TLS handshake verified against the client CA: its principal is its first URI subject
 * alternative name (a SPIFFE id, for one), else its first DNS name, else its subject's common name.
 */
final class ClientCertificateAuthenticator implements Authenticator {
    private static final int SAN_DNS = 2;
    private static final int SAN_URI = 6;

    @Override
    public Optional<Principal> authenticate(Credentials credentials) throws AuthenticationException {
        if (credentials.clientCertificate().isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new Principal(name(credentials.clientCertificate().get()), Set.of(), "mtls"));
    }

    static String name(X509Certificate certificate) throws AuthenticationException {
        Optional<String> uri = alternativeName(certificate, SAN_URI);
        if (uri.isPresent()) {
            return uri.get();
        }
        Optional<String> dns = alternativeName(certificate, SAN_DNS);
        if (dns.isPresent()) {
            return dns.get();
        }
        try {
            for (Rdn rdn : new LdapName(certificate.getSubjectX500Principal().getName()).getRdns()) {
                if (rdn.getType().equalsIgnoreCase("CN")) {
                    return rdn.getValue().toString();
                }
            }
        } catch (InvalidNameException e) {
            throw new AuthenticationException("the client certificate's subject cannot be read", e);
        }
        throw new AuthenticationException("the client certificate names no one: no URI or DNS SAN, no subject CN");
    }

    private static Optional<String> alternativeName(X509Certificate certificate, int type)
            throws AuthenticationException {
        try {
            Collection<List<?>> names = certificate.getSubjectAlternativeNames();
            if (names == null) {
                return Optional.empty();
            }
            return names.stream()
                    .filter(entry -> entry.size() == 2 && Integer.valueOf(type).equals(entry.get(0)))
                    .map(entry -> String.valueOf(entry.get(1)))
                    .findFirst();
        } catch (CertificateParsingException e) {
            throw new AuthenticationException("the client certificate's alternative names cannot be read", e);
        }
    }
}
