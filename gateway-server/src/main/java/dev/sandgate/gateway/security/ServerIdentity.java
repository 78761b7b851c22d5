package dev.sandgate.gateway.security;

import io.grpc.util.CertificateUtils;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.X509Certificate;
import java.util.List;

/** A certificate chain and its private key (PEM, PKCS#8), checked to belong together before they are served. */
record ServerIdentity(List<X509Certificate> chain, PrivateKey key) {
    ServerIdentity {
        chain = List.copyOf(chain);
    }

    static ServerIdentity parse(byte[] certificatePem, byte[] keyPem) throws Exception {
        X509Certificate[] chain = certificates(certificatePem);
        PrivateKey key;
        try {
            key = CertificateUtils.getPrivateKey(new ByteArrayInputStream(keyPem));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("the key is not a PKCS#8 PEM private key (BEGIN PRIVATE KEY)", e);
        }
        if (!matches(chain[0], key)) {
            throw new IllegalArgumentException("the key does not belong to the certificate");
        }
        return new ServerIdentity(List.of(chain), key);
    }

    static X509Certificate[] certificates(byte[] pem) throws GeneralSecurityException {
        X509Certificate[] certificates = CertificateUtils.getX509Certificates(new ByteArrayInputStream(pem));
        if (certificates.length == 0) {
            throw new IllegalArgumentException("no PEM certificate found");
        }
        return certificates;
    }

    /** Whether a signature by {@code key} verifies with the certificate's public key. */
    private static boolean matches(X509Certificate certificate, PrivateKey key) throws GeneralSecurityException {
        String algorithm = switch (key.getAlgorithm()) {
            case "RSA" -> "SHA256withRSA";
            case "EC" -> "SHA256withECDSA";
            case "Ed25519", "EdDSA" -> "Ed25519";
            default -> throw new IllegalArgumentException("unsupported key algorithm " + key.getAlgorithm());
        };
        byte[] probe = "sandgate key check".getBytes(StandardCharsets.US_ASCII);
        Signature signer = Signature.getInstance(algorithm);
        signer.initSign(key);
        signer.update(probe);
        byte[] signature = signer.sign();
        Signature verifier = Signature.getInstance(algorithm);
        verifier.initVerify(certificate.getPublicKey());
        verifier.update(probe);
        return verifier.verify(signature);
    }
}
