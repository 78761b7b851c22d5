package dev.sandgate.driver.host;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PublicKey;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.CertIOException;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A certificate authority for the tests' mutual TLS, made with BouncyCastle: its own certificate, and the driver host's
 * and clients' certificates it signs, all written as PEM files (keys as PKCS#8) into a directory. EC P-256 keys, valid
 * for a day.
 */
final class TestCertificateAuthority {
    /** A certificate and its private key, as PEM files. */
    record Issued(Path certificate, Path key) {}

    private static final AtomicLong SERIAL = new AtomicLong(System.currentTimeMillis());

    private final Path directory;
    private final X500Name name;
    private final KeyPair keys;
    private final Path certificate;

    private TestCertificateAuthority(Path directory, X500Name name, KeyPair keys, Path certificate) {
        this.directory = directory;
        this.name = name;
        this.keys = keys;
        this.certificate = certificate;
    }

    /** A new self-signed CA named {@code commonName}, its files under {@code directory}. */
    static TestCertificateAuthority create(Path directory, String commonName) {
        X500Name name = new X500Name("CN=" + commonName);
        KeyPair keys = newKeys();
        X509Certificate self = sign(name, keys, name, keys.getPublic(), Extensions.AUTHORITY);
        Path file = directory.resolve(commonName + "-ca.crt");
        writePem(file, "CERTIFICATE", encoded(self));
        return new TestCertificateAuthority(directory, name, keys, file);
    }

    /** This CA's certificate (PEM): what a peer trusts. */
    Path certificate() {
        return certificate;
    }

    /** A server certificate for {@code 127.0.0.1} and {@code localhost}. */
    Issued server(String commonName) {
        return issue(commonName, Extensions.SERVER);
    }

    /** A client certificate. */
    Issued client(String commonName) {
        return issue(commonName, Extensions.CLIENT);
    }

    private Issued issue(String commonName, Extensions kind) {
        KeyPair subjectKeys = newKeys();
        X509Certificate issued = sign(name, keys, new X500Name("CN=" + commonName), subjectKeys.getPublic(), kind);
        Path certificateFile = directory.resolve(commonName + ".crt");
        Path keyFile = directory.resolve(commonName + ".key");
        writePem(certificateFile, "CERTIFICATE", encoded(issued));
        writePem(keyFile, "PRIVATE KEY", subjectKeys.getPrivate().getEncoded());
        return new Issued(certificateFile, keyFile);
    }

    private enum Extensions {
        AUTHORITY,
        SERVER,
        CLIENT
    }

    private static X509Certificate sign(
            X500Name issuer, KeyPair issuerKeys, X500Name subject, PublicKey subjectKey, Extensions kind) {
        Instant now = Instant.now();
        var builder = new JcaX509v3CertificateBuilder(
                issuer,
                BigInteger.valueOf(SERIAL.incrementAndGet()),
                Date.from(now.minus(Duration.ofMinutes(5))),
                Date.from(now.plus(Duration.ofDays(1))),
                subject,
                subjectKey);
        try {
            var utilities = new JcaX509ExtensionUtils();
            builder.addExtension(
                    Extension.subjectKeyIdentifier, false, utilities.createSubjectKeyIdentifier(subjectKey));
            builder.addExtension(
                    Extension.authorityKeyIdentifier,
                    false,
                    utilities.createAuthorityKeyIdentifier(issuerKeys.getPublic()));
            switch (kind) {
                case AUTHORITY -> {
                    builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
                    builder.addExtension(
                            Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
                }
                case SERVER -> {
                    builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
                    builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
                    builder.addExtension(
                            Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
                    builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[] {
                        new GeneralName(GeneralName.iPAddress, "127.0.0.1"),
                        new GeneralName(GeneralName.dNSName, "localhost")
                    }));
                }
                case CLIENT -> {
                    builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
                    builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
                    builder.addExtension(
                            Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_clientAuth));
                }
            }
            var signer = new JcaContentSignerBuilder("SHA256withECDSA").build(issuerKeys.getPrivate());
            return new JcaX509CertificateConverter().getCertificate(builder.build(signer));
        } catch (CertIOException | OperatorCreationException | GeneralSecurityException e) {
            throw new IllegalStateException("cannot sign a test certificate", e);
        }
    }

    private static KeyPair newKeys() {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
            generator.initialize(new ECGenParameterSpec("secp256r1"));
            return generator.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] encoded(X509Certificate certificate) {
        try {
            return certificate.getEncoded();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void writePem(Path file, String type, byte[] der) {
        String body = Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der);
        String pem = "-----BEGIN " + type + "-----\n" + body + "\n-----END " + type + "-----\n";
        try {
            Files.writeString(file, pem, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
