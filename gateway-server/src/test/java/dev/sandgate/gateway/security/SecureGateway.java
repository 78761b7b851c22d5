package dev.sandgate.gateway.security;

import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.RSASSASigner;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.RSAKey;
import com.nimbusds.jose.jwk.gen.RSAKeyGenerator;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.gateway.server.Gateway;
import dev.sandgate.gateway.server.GatewayServer;
import dev.sandgate.gateway.server.GatewaySettings;
import dev.sandgate.gateway.testing.FakeDriver;
import dev.sandgate.gateway.testing.FakeDriverProvider;
import dev.sandgate.testing.StoreSchema;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.TlsChannelCredentials;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.AbstractStub;
import io.grpc.stub.MetadataUtils;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A gateway over real TLS on loopback with every authenticator: client certificates of {@link #pki}, JWTs signed by
 * {@link #jwk} (issuer {@link #ISSUER}, audience {@link #AUDIENCE}), and the API token {@link #API_TOKEN} of principal
 * {@code ci}. Its access policy: alice admin of team-a, carol operator of team-a, bob admin of team-b, ci operator of
 * team-b, the client certificate {@link #CLIENT_URI} operator of team-a, group auditors viewer everywhere.
 */
final class SecureGateway implements AutoCloseable {
    static final String ISSUER = "https://issuer.sandgate.test";
    static final String AUDIENCE = "sandgate";
    static final String API_TOKEN = "sgt-test-0123456789abcdef0123456789abcdef";
    static final String CLIENT_URI = "spiffe://sandgate.test/ci";
    static final String POLICY = """
            {"bindings": [
              {"workspace": "team-a", "role": "admin", "principals": ["alice"]},
              {"workspace": "team-a", "role": "operator", "principals": ["carol", "%s"]},
              {"workspace": "team-b", "role": "admin", "principals": ["bob"]},
              {"workspace": "team-b", "role": "operator", "principals": ["ci"]},
              {"workspace": "*", "role": "viewer", "groups": ["auditors"]}
            ]}
            """.formatted(CLIENT_URI);

    final Path dir;
    final TestPki pki;
    final RSAKey jwk;
    private final Gateway gateway;
    private final GatewaySecurity security;
    private final GatewayServer server;
    private final List<ManagedChannel> channels = new ArrayList<>();
    private final StoreSchema schema;

    private SecureGateway(
            Path dir,
            TestPki pki,
            RSAKey jwk,
            Gateway gateway,
            GatewaySecurity security,
            GatewayServer server,
            StoreSchema schema) {
        this.dir = dir;
        this.schema = schema;
        this.pki = pki;
        this.jwk = jwk;
        this.gateway = gateway;
        this.security = security;
        this.server = server;
    }

    static SecureGateway start(Path dir) throws Exception {
        TestPki pki = TestPki.newCa("sandgate test CA");
        Path pkiDir = Files.createDirectories(dir.resolve("pki"));
        pki.server("gateway-1").write(pkiDir, "server");
        Files.writeString(
                pkiDir.resolve("ca.crt"),
                TestPki.pem("CERTIFICATE", pki.ca().certificate().getEncoded()));
        RSAKey jwk = new RSAKeyGenerator(2048).keyID("key-1").generate();
        Files.writeString(
                dir.resolve("jwks.json"), new JWKSet(jwk).toPublicJWKSet().toString());
        Files.writeString(
                dir.resolve("tokens"),
                "# test tokens\nci " + StaticTokenAuthenticator.digest(API_TOKEN) + " ci-group\n");
        Files.writeString(dir.resolve("policy.json"), POLICY);
        List<String> args = new ArrayList<>(List.of(
                "--data-dir", dir.resolve("data").toString(),
                "--listen", "127.0.0.1:0",
                "--tls-cert", pkiDir.resolve("server.crt").toString(),
                "--tls-key", pkiDir.resolve("server.key").toString(),
                "--tls-client-ca", pkiDir.resolve("ca.crt").toString(),
                "--tls-client-auth", "optional",
                "--jwt-jwks", dir.resolve("jwks.json").toString(),
                "--jwt-issuer", ISSUER,
                "--jwt-audience", AUDIENCE,
                "--jwt-clock-skew", "30s",
                "--api-token-file", dir.resolve("tokens").toString(),
                "--authz-policy", dir.resolve("policy.json").toString(),
                "--security-reload-period", "100ms"));
        // On a PostgreSQL run, a schema of its own (StoreSchema).
        StoreSchema schema = StoreSchema.onPostgres() ? StoreSchema.create() : null;
        if (schema != null) {
            args.addAll(schema.storeArgs());
        }
        GatewaySettings config = GatewaySettings.load(args.toArray(String[]::new), Map.of());
        Gateway gateway = Gateway.open(
                config,
                Clock.systemUTC(),
                (gatewayId, clock) -> new Gateway.NamedDriver(
                        FakeDriverProvider.NAME,
                        new FakeDriver(dir.resolve("backend"), gatewayId, FakeDriver.allCapabilities())));
        GatewaySecurity security = GatewaySecurity.open(config.security(), gateway.lifecycle(), Clock.systemUTC());
        GatewayServer server = GatewayServer.start(
                gateway,
                NettyServerBuilder.forAddress(
                        new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), security.credentials()),
                List.of(security.interceptor()));
        return new SecureGateway(dir, pki, jwk, gateway, security, server, schema);
    }

    int port() {
        return server.port();
    }

    Path pkiDir() {
        return dir.resolve("pki");
    }

    /** A TLS channel trusting the test CA, presenting {@code clientCertificate} if given. */
    ManagedChannel channel(Optional<TestPki.Issued> clientCertificate) throws IOException {
        TlsChannelCredentials.Builder tls = TlsChannelCredentials.newBuilder()
                .trustManager(pkiDir().resolve("ca.crt").toFile());
        if (clientCertificate.isPresent()) {
            Path clientDir = Files.createTempDirectory(dir, "client");
            clientCertificate.get().write(clientDir, "client");
            tls.keyManager(
                    clientDir.resolve("client.crt").toFile(),
                    clientDir.resolve("client.key").toFile());
        }
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("localhost", port(), tls.build()).build();
        channels.add(channel);
        return channel;
    }

    ManagedChannel channel() throws IOException {
        return channel(Optional.empty());
    }

    /** A stub over a TLS channel without a client certificate, sending {@code bearer}. */
    SandboxServiceGrpc.SandboxServiceBlockingStub stub(String bearer) throws IOException {
        return withBearer(SandboxServiceGrpc.newBlockingStub(channel()), bearer)
                .withDeadlineAfter(30, TimeUnit.SECONDS);
    }

    static <S extends AbstractStub<S>> S withBearer(S stub, String bearer) {
        Metadata headers = new Metadata();
        headers.put(SecurityInterceptor.AUTHORIZATION, "Bearer " + bearer);
        return stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
    }

    /** A valid JWT for {@code subject}, adjusted by {@code claims}. */
    String jwt(String subject, Consumer<JWTClaimsSet.Builder> claims) throws Exception {
        Instant now = Instant.now();
        JWTClaimsSet.Builder builder = new JWTClaimsSet.Builder()
                .subject(subject)
                .issuer(ISSUER)
                .audience(AUDIENCE)
                .issueTime(Date.from(now))
                .notBeforeTime(Date.from(now.minusSeconds(5)))
                .expirationTime(Date.from(now.plus(Duration.ofMinutes(10))));
        claims.accept(builder);
        SignedJWT jwt = new SignedJWT(
                new JWSHeader.Builder(JWSAlgorithm.RS256)
                        .keyID(jwk.getKeyID())
                        .type(JOSEObjectType.JWT)
                        .build(),
                builder.build());
        jwt.sign(new RSASSASigner(jwk));
        return jwt.serialize();
    }

    String jwt(String subject) throws Exception {
        return jwt(subject, claims -> {});
    }

    void replacePolicy(String json) throws IOException {
        TestPki.writeAtomically(dir.resolve("policy.json"), json);
    }

    static String text(Path file) throws IOException {
        return Files.readString(file, StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        for (ManagedChannel channel : channels) {
            channel.shutdownNow();
        }
        try {
            server.close();
            security.close();
            gateway.close();
        } finally {
            if (schema != null) {
                schema.close();
            }
        }
    }
}
