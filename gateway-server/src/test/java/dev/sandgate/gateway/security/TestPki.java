package dev.sandgate.gateway.security;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/** Test certificates made with BouncyCastle: a CA, and server or client certificates it signs, written as PEM. */
final class TestPki {
    private static final AtomicLong SERIAL = new AtomicLong(System.nanoTime());

    /** A certificate and its key pair. */
    record Issued(X509Certificate certificate, KeyPair keys) {
        /** Writes {@code name.crt} and {@code name.key} (PKCS#8) under {@code dir}; returns the certificate's path. */
        Path write(Path dir, String name) throws IOException {
            Path cert = dir.resolve(name + ".crt");
            writeAtomically(cert, pem("CERTIFICATE", encoded(certificate)));
            writeAtomically(
                    dir.resolve(name + ".key"),
                    pem("PRIVATE KEY", keys.getPrivate().getEncoded()));
            return cert;
        }
    }

    private final Issued ca;

    private TestPki(Issued ca) {
        this.ca = ca;
    }

    static TestPki newCa(String name) throws Exception {
        KeyPair keys = keyPair();
        X500Name subject = new X500Name("CN=" + name);
        Instant now = Instant.now();
        JcaX509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(
                subject,
                serial(),
                Date.from(now.minus(Duration.ofHours(1))),
                Date.from(now.plus(Duration.ofDays(1))),
                subject,
                keys.getPublic());
        builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
        builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
        return new TestPki(new Issued(sign(builder, keys), keys));
    }

    Issued ca() {
        return ca;
    }

    /** A server certificate for 127.0.0.1 and localhost. */
    Issued server(String commonName) throws Exception {
        return issue(
                commonName,
                new GeneralNames(new GeneralName[] {
                    new GeneralName(GeneralName.iPAddress, "127.0.0.1"),
                    new GeneralName(GeneralName.dNSName, "localhost")
                }),
                Instant.now().minus(Duration.ofHours(1)),
                Instant.now().plus(Duration.ofDays(1)));
    }

    /** A client certificate whose URI SAN is {@code uri}, valid between the two instants. */
    Issued client(String uri, Instant notBefore, Instant notAfter) throws Exception {
        return issue(
                "client",
                new GeneralNames(new GeneralName(GeneralName.uniformResourceIdentifier, uri)),
                notBefore,
                notAfter);
    }

    Issued client(String uri) throws Exception {
        return client(
                uri, Instant.now().minus(Duration.ofHours(1)), Instant.now().plus(Duration.ofDays(1)));
    }

    private Issued issue(String commonName, GeneralNames names, Instant notBefore, Instant notAfter) throws Exception {
        KeyPair keys = keyPair();
        JcaX509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(
                ca.certificate(),
                serial(),
                Date.from(notBefore),
                Date.from(notAfter),
                new X500Name("CN=" + commonName),
                keys.getPublic());
        builder.addExtension(Extension.subjectAlternativeName, false, names);
        builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
        return new Issued(sign(builder, ca.keys()), keys);
    }

    private static X509Certificate sign(JcaX509v3CertificateBuilder builder, KeyPair signer) throws Exception {
        return new JcaX509CertificateConverter()
                .getCertificate(builder.build(new JcaContentSignerBuilder("SHA256withRSA").build(signer.getPrivate())));
    }

    private static KeyPair keyPair() throws GeneralSecurityException {
        KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
        generator.initialize(2048);
        return generator.generateKeyPair();
    }

    private static BigInteger serial() {
        return BigInteger.valueOf(SERIAL.incrementAndGet());
    }

    private static byte[] encoded(X509Certificate certificate) {
        try {
            return certificate.getEncoded();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                        .encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }

    /** Replaces a file in one step, as cert-manager's Secret updates do: a reader never sees half of it. */
    static void writeAtomically(Path file, String text) throws IOException {
        Path temp = Files.createTempFile(file.toAbsolutePath().getParent(), ".pem", ".tmp");
        Files.writeString(temp, text, StandardCharsets.UTF_8);
        Files.move(
                temp,
                file,
                java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }
}
