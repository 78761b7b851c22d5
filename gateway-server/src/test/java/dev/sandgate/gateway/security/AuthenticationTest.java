package dev.sandgate.gateway.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.MACSigner;
import com.nimbusds.jose.crypto.RSASSASigner;
import com.nimbusds.jose.jwk.RSAKey;
import com.nimbusds.jose.jwk.gen.RSAKeyGenerator;
import com.nimbusds.jose.util.Base64URL;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.PlainJWT;
import com.nimbusds.jwt.SignedJWT;
import dev.sandgate.api.v1.ListSandboxesRequest;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/** Authentication over real TLS on loopback: client certificates, bearer JWTs, API tokens, and the open health check. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AuthenticationTest {
    private static final ListSandboxesRequest LIST_TEAM_A =
            ListSandboxesRequest.newBuilder().setWorkspace("team-a").build();

    private SecureGateway gateway;

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        gateway = SecureGateway.start(dir);
    }

    @AfterAll
    void stop() {
        if (gateway != null) { // null when its start was skipped (no PostgreSQL for a PostgreSQL run)
            gateway.close();
        }
    }

    private SandboxServiceGrpc.SandboxServiceBlockingStub certificateStub(TestPki.Issued certificate) throws Exception {
        return SandboxServiceGrpc.newBlockingStub(gateway.channel(Optional.of(certificate)))
                .withDeadlineAfter(30, TimeUnit.SECONDS);
    }

    private static void assertCode(Runnable call, Status.Code code) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(
                        StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(code));
    }

    @Test
    @DisplayName("a call without any credential is UNAUTHENTICATED")
    void callWithoutCredentialsIsUnauthenticated() throws Exception {
        var stub = SandboxServiceGrpc.newBlockingStub(gateway.channel());
        assertCode(() -> stub.listSandboxes(LIST_TEAM_A), Status.Code.UNAUTHENTICATED);
    }

    @Test
    @DisplayName("the health check answers without credentials")
    void healthStaysOpen() throws Exception {
        HealthCheckResponse response = HealthGrpc.newBlockingStub(gateway.channel())
                .check(HealthCheckRequest.newBuilder().build());
        assertThat(response.getStatus()).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
    }

    @Nested
    @DisplayName("client certificates")
    class ClientCertificates {
        @Test
        @DisplayName("a certificate of the client CA authenticates its URI SAN")
        void certificateOfTheClientCaAuthenticates() throws Exception {
            var stub = certificateStub(gateway.pki.client(SecureGateway.CLIENT_URI));
            assertThatCode(() -> stub.listSandboxes(LIST_TEAM_A)).doesNotThrowAnyException();
        }

        @Test
        @DisplayName("a certificate from another CA authenticates no one")
        void certificateFromAnotherCaIsRefused() throws Exception {
            TestPki other = TestPki.newCa("another CA");
            var stub = certificateStub(other.client(SecureGateway.CLIENT_URI));
            // The client's TLS stack offers no certificate the server's CA list does not name, so the call arrives
            // without one (UNAUTHENTICATED); a stack that offered it anyway would fail the handshake (UNAVAILABLE).
            assertThatThrownBy(() -> stub.listSandboxes(LIST_TEAM_A))
                    .isInstanceOfSatisfying(
                            StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getCode())
                                    .isIn(Status.Code.UNAUTHENTICATED, Status.Code.UNAVAILABLE));
        }

        @Test
        @DisplayName("an expired certificate fails the handshake")
        void expiredCertificateIsRefused() throws Exception {
            Instant now = Instant.now();
            var stub = certificateStub(gateway.pki.client(
                    SecureGateway.CLIENT_URI, now.minus(Duration.ofDays(2)), now.minus(Duration.ofDays(1))));
            assertCode(() -> stub.listSandboxes(LIST_TEAM_A), Status.Code.UNAVAILABLE);
        }

        @Test
        @DisplayName("a client certificate does not stand in for an invalid bearer token")
        void invalidBearerIsRefusedEvenWithCertificate() throws Exception {
            var stub = SecureGateway.withBearer(
                    certificateStub(gateway.pki.client(SecureGateway.CLIENT_URI)), "not-a-token");
            assertCode(() -> stub.listSandboxes(LIST_TEAM_A), Status.Code.UNAUTHENTICATED);
        }
    }

    @Nested
    @DisplayName("bearer JWTs")
    class Jwts {
        private void assertRefused(String token) throws Exception {
            var stub = gateway.stub(token);
            assertCode(() -> stub.listSandboxes(LIST_TEAM_A), Status.Code.UNAUTHENTICATED);
        }

        @Test
        @DisplayName("a valid JWT authenticates its subject")
        void validJwtAuthenticates() throws Exception {
            assertThat(gateway.stub(gateway.jwt("alice")).listSandboxes(LIST_TEAM_A))
                    .isNotNull();
        }

        @Test
        @DisplayName("an expired JWT (beyond the clock skew) is refused")
        void expired() throws Exception {
            assertRefused(gateway.jwt(
                    "alice", c -> c.expirationTime(Date.from(Instant.now().minusSeconds(120)))));
        }

        @Test
        @DisplayName("a JWT not yet valid (beyond the clock skew) is refused")
        void notYetValid() throws Exception {
            assertRefused(gateway.jwt(
                    "alice", c -> c.notBeforeTime(Date.from(Instant.now().plusSeconds(120)))));
        }

        @Test
        @DisplayName("a JWT of another issuer is refused")
        void wrongIssuer() throws Exception {
            assertRefused(gateway.jwt("alice", c -> c.issuer("https://evil.test")));
        }

        @Test
        @DisplayName("a JWT for another audience is refused")
        void wrongAudience() throws Exception {
            assertRefused(gateway.jwt("alice", c -> c.audience("someone-else")));
        }

        @Test
        @DisplayName("an unsigned JWT (alg none) is refused")
        void algNone() throws Exception {
            SignedJWT valid = SignedJWT.parse(gateway.jwt("alice"));
            assertRefused(new PlainJWT(valid.getJWTClaimsSet()).serialize());
        }

        @Test
        @DisplayName("a JWT signed with HS256 using the public key as the secret is refused")
        void hs256WithThePublicKey() throws Exception {
            SignedJWT valid = SignedJWT.parse(gateway.jwt("alice"));
            SignedJWT forged = new SignedJWT(
                    new JWSHeader.Builder(JWSAlgorithm.HS256)
                            .keyID(gateway.jwk.getKeyID())
                            .type(JOSEObjectType.JWT)
                            .build(),
                    valid.getJWTClaimsSet());
            forged.sign(new MACSigner(gateway.jwk.toPublicJWK().toRSAPublicKey().getEncoded()));
            assertRefused(forged.serialize());
        }

        @Test
        @DisplayName("a JWT signed by a key of unknown kid is refused")
        void unknownKid() throws Exception {
            RSAKey stranger = new RSAKeyGenerator(2048).keyID("key-unknown").generate();
            SignedJWT jwt = new SignedJWT(
                    new JWSHeader.Builder(JWSAlgorithm.RS256)
                            .keyID("key-unknown")
                            .build(),
                    SignedJWT.parse(gateway.jwt("alice")).getJWTClaimsSet());
            jwt.sign(new RSASSASigner(stranger));
            assertRefused(jwt.serialize());
        }

        @Test
        @DisplayName("a JWT whose payload was changed after signing is refused")
        void tamperedPayload() throws Exception {
            String[] parts = gateway.jwt("carol").split("\\.", -1);
            JWTClaimsSet changed = new JWTClaimsSet.Builder(
                            JWTClaimsSet.parse(Base64URL.from(parts[1]).decodeToString()))
                    .subject("alice")
                    .build();
            String payload = Base64URL.encode(changed.toString().getBytes(StandardCharsets.UTF_8))
                    .toString();
            assertRefused(parts[0] + "." + payload + "." + parts[2]);
        }
    }

    @Nested
    @DisplayName("API tokens")
    class ApiTokens {
        @Test
        @DisplayName("a listed token authenticates its name")
        void listedTokenAuthenticates() throws Exception {
            var stub = gateway.stub(SecureGateway.API_TOKEN);
            assertThat(stub.listSandboxes(ListSandboxesRequest.newBuilder()
                            .setWorkspace("team-b")
                            .build()))
                    .isNotNull();
        }

        @Test
        @DisplayName("an unlisted token is refused")
        void unlistedTokenIsRefused() throws Exception {
            var stub = gateway.stub(SecureGateway.API_TOKEN + "x");
            assertCode(() -> stub.listSandboxes(LIST_TEAM_A), Status.Code.UNAUTHENTICATED);
        }
    }
}
