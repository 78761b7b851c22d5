package dev.sandgate.benchmarks;

import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.RSASSASigner;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.RSAKey;
import com.nimbusds.jose.jwk.gen.RSAKeyGenerator;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import dev.sandgate.gateway.security.GatewaySecurity;
import dev.sandgate.gateway.server.Gateway;
import dev.sandgate.gateway.server.GatewayServer;
import dev.sandgate.gateway.server.GatewaySettings;
import io.grpc.ClientInterceptors;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.TlsChannelCredentials;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.MetadataUtils;
import java.io.IOException;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * What security costs: the same closed loop of lifecycle operations (create, stop, start, delete: one cycle, four
 * calls, each with a request_id) against two gateways in this JVM on the reference driver, one plaintext and
 * unauthenticated, one with TLS, a bearer JWT (RS256) on every call, and the access policy checked, in the same run.
 * Prints a markdown table: operations per second and the p50 and p99 of one call, per mode.
 *
 * <p>Two rounds with the modes alternating, each mode measured after 3 s of warm-up ({@link Settings#USAGE}).
 */
public final class SecureGatewayBenchmark {
    private static final String WORKSPACE = "bench";
    private static final int ROUNDS = 2;

    private SecureGatewayBenchmark() {}

    /** The closed loop's clients and how long each mode is measured per round. */
    record Settings(int clients, int seconds) {
        static final String USAGE = """
                Usage: SecureGatewayBenchmark [--clients N] [--seconds S]
                  --clients  clients in closed loop, 1 to 64 (default 4)
                  --seconds  how long each mode is measured per round, 1 to 300 (default 10)
                """;

        static Settings parse(String... args) {
            BenchmarkOptions options = BenchmarkOptions.parse(args, Set.of("--clients", "--seconds"), Set.of());
            return new Settings(options.integer("--clients", 4, 1, 64), options.integer("--seconds", 10, 1, 300));
        }
    }

    public static void main(String[] args) throws Exception {
        Settings settings = BenchmarkOptions.settingsOrExit(args, Settings.USAGE, Settings::parse);
        int clients = settings.clients();
        int seconds = settings.seconds();
        Path work = Files.createTempDirectory("sandgate-secure-bench");
        if (System.getProperty("logback.configurationFile") == null) {
            // the gateway's lines (and the audit log's) to a file, as the gateway benchmark does: the console keeps the
            // table
            System.setProperty("sandgate.bench.log", work.resolve("gateway.log").toString());
            System.setProperty("logback.configurationFile", "sandgate-bench-logback.xml");
        }
        Secrets secrets = Secrets.create(work);
        List<String> secureArgs = List.of(
                "--tls-cert", secrets.cert.toString(),
                "--tls-key", secrets.key.toString(),
                "--jwt-jwks", secrets.jwks.toString(),
                "--jwt-issuer", Secrets.ISSUER,
                "--jwt-audience", Secrets.AUDIENCE,
                "--authz-policy", secrets.policy.toString());
        // Two rounds, the modes alternating, so that a machine whose speed drifts shows it in both.
        List<String> rows = new ArrayList<>();
        for (int round = 1; round <= ROUNDS; round++) {
            rows.add(run(
                    round + ": plaintext, no authentication",
                    work.resolve("plain-" + round),
                    List.of(),
                    null,
                    secrets,
                    clients,
                    seconds));
            rows.add(run(
                    round + ": TLS + JWT (RS256) + access policy",
                    work.resolve("secure-" + round),
                    secureArgs,
                    secrets,
                    secrets,
                    clients,
                    seconds));
        }
        System.out.printf(
                "%n%d clients, %d s per mode and round after 3 s of warm-up, %d processors, reference driver%n%n",
                clients, seconds, Runtime.getRuntime().availableProcessors());
        System.out.println("| mode | lifecycle calls/s | p50 ms | p99 ms |");
        System.out.println("|---|---|---|---|");
        rows.forEach(System.out::println);
    }

    private static String run(
            String label, Path dir, List<String> securityArgs, Secrets tls, Secrets secrets, int clients, int seconds)
            throws Exception {
        List<String> args = new ArrayList<>(List.of(
                "--listen",
                "127.0.0.1:0",
                "--data-dir",
                dir.resolve("data").toString(),
                "--driver",
                "reference",
                "--driver-property",
                "reference.directory=" + dir.resolve("sandboxes"),
                // as the gateway benchmark: the reference driver's rescans (default every 50 ms) stay out of the way
                "--driver-property",
                "reference.watch-interval=1000ms"));
        args.addAll(securityArgs);
        GatewaySettings config = GatewaySettings.load(args.toArray(String[]::new), Map.of());
        try (Gateway gateway = Gateway.open(config);
                GatewaySecurity security =
                        GatewaySecurity.open(config.security(), gateway.lifecycle(), Clock.systemUTC());
                GatewayServer server = GatewayServer.start(
                        gateway,
                        NettyServerBuilder.forAddress(
                                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), security.credentials()),
                        List.of(security.interceptor()))) {
            ManagedChannel channel = tls == null
                    ? NettyChannelBuilder.forAddress("127.0.0.1", server.port(), InsecureChannelCredentials.create())
                            .build()
                    : NettyChannelBuilder.forAddress(
                                    "localhost",
                                    server.port(),
                                    TlsChannelCredentials.newBuilder()
                                            .trustManager(tls.ca.toFile())
                                            .build())
                            .build();
            try {
                io.grpc.Channel calls = channel;
                if (tls != null) {
                    Metadata headers = new Metadata();
                    headers.put(
                            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER),
                            "Bearer " + secrets.jwt());
                    calls = ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers));
                }
                LifecycleClient client = new LifecycleClient(calls, Duration.ofSeconds(30), "busybox");
                loop(client, clients, Duration.ofSeconds(3), "warm");
                long[] samples = loop(client, clients, Duration.ofSeconds(seconds), "run");
                Latencies latencies = new Latencies(samples);
                return String.format(
                        Locale.ROOT,
                        "| %s | %.0f | %.2f | %.2f |",
                        label,
                        samples.length / (double) seconds,
                        latencies.percentileMillis(50),
                        latencies.percentileMillis(99));
            } finally {
                channel.shutdownNow();
            }
        }
    }

    /** {@code clients} threads cycling create, stop, start, delete for {@code length}; the latency of every call. */
    private static long[] loop(LifecycleClient client, int clients, Duration length, String phase) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        long end = System.nanoTime() + length.toNanos();
        List<Future<long[]>> results = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            int number = c;
            results.add(pool.submit(() -> {
                long[] samples = new long[1 << 16];
                int n = 0;
                int cycle = 0;
                while (System.nanoTime() < end && n + 4 <= samples.length) {
                    long t0 = System.nanoTime();
                    String id = client.create(WORKSPACE, phase + "-" + number + "-" + cycle++);
                    long t1 = System.nanoTime();
                    client.stop(id);
                    long t2 = System.nanoTime();
                    client.start(id);
                    long t3 = System.nanoTime();
                    client.delete(id);
                    long t4 = System.nanoTime();
                    samples[n++] = t1 - t0;
                    samples[n++] = t2 - t1;
                    samples[n++] = t3 - t2;
                    samples[n++] = t4 - t3;
                }
                return java.util.Arrays.copyOf(samples, n);
            }));
        }
        long[] all = new long[0];
        for (Future<long[]> result : results) {
            long[] part = result.get();
            long[] merged = java.util.Arrays.copyOf(all, all.length + part.length);
            System.arraycopy(part, 0, merged, all.length, part.length);
            all = merged;
        }
        pool.shutdown();
        return all;
    }

    /** A throwaway CA, server certificate, JWKS, access policy and signing key, written under a directory. */
    private static final class Secrets {
        static final String ISSUER = "https://issuer.bench.invalid";
        static final String AUDIENCE = "sandgate";

        final Path ca;
        final Path cert;
        final Path key;
        final Path jwks;
        final Path policy;
        final RSAKey signing;

        private Secrets(Path ca, Path cert, Path key, Path jwks, Path policy, RSAKey signing) {
            this.ca = ca;
            this.cert = cert;
            this.key = key;
            this.jwks = jwks;
            this.policy = policy;
            this.signing = signing;
        }

        static Secrets create(Path dir) throws Exception {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
            generator.initialize(2048);
            KeyPair caKeys = generator.generateKeyPair();
            KeyPair serverKeys = generator.generateKeyPair();
            Instant now = Instant.now();
            X500Name caName = new X500Name("CN=bench CA");
            JcaX509v3CertificateBuilder caBuilder = new JcaX509v3CertificateBuilder(
                    caName,
                    BigInteger.ONE,
                    Date.from(now.minusSeconds(3600)),
                    Date.from(now.plusSeconds(86400)),
                    caName,
                    caKeys.getPublic());
            caBuilder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
            X509Certificate caCert = sign(caBuilder, caKeys);
            JcaX509v3CertificateBuilder serverBuilder = new JcaX509v3CertificateBuilder(
                    caCert,
                    BigInteger.TWO,
                    Date.from(now.minusSeconds(3600)),
                    Date.from(now.plusSeconds(86400)),
                    new X500Name("CN=localhost"),
                    serverKeys.getPublic());
            serverBuilder.addExtension(
                    Extension.subjectAlternativeName,
                    false,
                    new GeneralNames(new GeneralName(GeneralName.dNSName, "localhost")));
            X509Certificate serverCert = sign(serverBuilder, caKeys);
            Path ca = write(dir.resolve("ca.crt"), pem("CERTIFICATE", caCert.getEncoded()));
            Path cert = write(dir.resolve("server.crt"), pem("CERTIFICATE", serverCert.getEncoded()));
            Path key = write(
                    dir.resolve("server.key"),
                    pem("PRIVATE KEY", serverKeys.getPrivate().getEncoded()));
            RSAKey signing = new RSAKeyGenerator(2048).keyID("bench").generate();
            Path jwks = write(
                    dir.resolve("jwks.json"),
                    new JWKSet(signing).toPublicJWKSet().toString());
            Path policy = write(
                    dir.resolve("policy.json"),
                    "{\"bindings\": [{\"workspace\": \"" + WORKSPACE
                            + "\", \"role\": \"admin\", \"principals\": [\"bench-client\"]}]}");
            return new Secrets(ca, cert, key, jwks, policy, signing);
        }

        String jwt() throws Exception {
            Instant now = Instant.now();
            SignedJWT jwt = new SignedJWT(
                    new JWSHeader.Builder(JWSAlgorithm.RS256)
                            .keyID(signing.getKeyID())
                            .build(),
                    new JWTClaimsSet.Builder()
                            .subject("bench-client")
                            .issuer(ISSUER)
                            .audience(AUDIENCE)
                            .expirationTime(Date.from(now.plusSeconds(3600)))
                            .build());
            jwt.sign(new RSASSASigner(signing));
            return jwt.serialize();
        }

        private static X509Certificate sign(JcaX509v3CertificateBuilder builder, KeyPair signer) throws Exception {
            return new JcaX509CertificateConverter()
                    .getCertificate(
                            builder.build(new JcaContentSignerBuilder("SHA256withRSA").build(signer.getPrivate())));
        }

        private static String pem(String type, byte[] der) {
            return "-----BEGIN " + type + "-----\n"
                    + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der) + "\n-----END " + type
                    + "-----\n";
        }

        private static Path write(Path file, String text) throws IOException {
            return Files.writeString(file, text);
        }
    }
}
