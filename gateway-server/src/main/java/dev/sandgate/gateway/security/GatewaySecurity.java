package dev.sandgate.gateway.security;

import static java.util.Objects.requireNonNull;

import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.source.JWKSource;
import com.nimbusds.jose.jwk.source.JWKSourceBuilder;
import com.nimbusds.jose.proc.SecurityContext;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.gateway.lifecycle.Commands;
import dev.sandgate.gateway.lifecycle.Lifecycle;
import dev.sandgate.gateway.server.ConfigException;
import io.grpc.InsecureServerCredentials;
import io.grpc.ServerCredentials;
import io.grpc.ServerInterceptor;
import io.grpc.TlsServerCredentials;
import io.grpc.util.AdvancedTlsX509KeyManager;
import io.grpc.util.AdvancedTlsX509TrustManager;
import java.net.MalformedURLException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The security of one running gateway, built from its {@link SecuritySettings}: the server's transport credentials
 * (TLS and mTLS with certificates reloaded from disk by grpc-java's AdvancedTls key and trust managers) and the
 * {@link SecurityInterceptor} (authentication, authorization, audit). Its reloads run on one daemon thread until
 * {@link #close()}.
 */
public final class GatewaySecurity implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(GatewaySecurity.class);

    private final ServerCredentials credentials;
    private final SecurityInterceptor interceptor;
    private final ScheduledExecutorService reloads;
    private final List<AutoCloseable> watches;

    private GatewaySecurity(
            ServerCredentials credentials,
            SecurityInterceptor interceptor,
            ScheduledExecutorService reloads,
            List<AutoCloseable> watches) {
        this.credentials = credentials;
        this.interceptor = interceptor;
        this.reloads = reloads;
        this.watches = watches;
    }

    /**
     * Reads every file the settings name (certificates, JWKS, tokens, policy) and starts watching them.
     *
     * @throws ConfigException when one cannot be read or used, naming it
     */
    public static GatewaySecurity open(SecuritySettings settings, Lifecycle lifecycle, Clock clock) {
        requireNonNull(settings, "settings is null");
        ScheduledExecutorService reloads = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "sandgate-security-reload");
            thread.setDaemon(true);
            return thread;
        });
        List<AutoCloseable> watches = new ArrayList<>();
        try {
            ServerCredentials credentials = credentials(settings, reloads, watches);
            Optional<Authentication> authentication = authentication(settings, reloads, watches);
            Optional<Authorizer> authorizer = Optional.empty();
            if (settings.authzPolicy().isPresent()) {
                ReloadingFile<AccessPolicy> policy = ReloadingFile.watch(
                        settings.authzPolicy().get(),
                        "authz-policy",
                        AccessPolicy::parse,
                        settings.reloadPeriod(),
                        reloads);
                watches.add(policy);
                authorizer = Optional.of(new Authorizer(
                        policy::get,
                        id -> workspaceOf(lifecycle, id),
                        (requestId, principal) -> recorded(lifecycle, requestId, principal)));
            }
            SecurityInterceptor interceptor = new SecurityInterceptor(authentication, authorizer, new AuditLog(clock));
            return new GatewaySecurity(credentials, interceptor, reloads, watches);
        } catch (IllegalArgumentException e) {
            closeAll(watches);
            reloads.shutdownNow();
            throw new ConfigException(e.getMessage(), e);
        } catch (RuntimeException e) {
            closeAll(watches);
            reloads.shutdownNow();
            throw e;
        }
    }

    private static ServerCredentials credentials(
            SecuritySettings settings, ScheduledExecutorService reloads, List<AutoCloseable> watches) {
        if (!settings.tls()) {
            return InsecureServerCredentials.create();
        }
        // grpc-java's own file watching (updateIdentityCredentials with a period) polls at most once a minute and
        // needs both files' modification times to change; ReloadingFile checks content every reload period.
        try {
            AdvancedTlsX509KeyManager keys = new AdvancedTlsX509KeyManager();
            watches.add(ReloadingFile.watchAll(
                    List.of(settings.tlsCert().get(), settings.tlsKey().get()),
                    "tls-cert/tls-key",
                    contents -> {
                        ServerIdentity identity = ServerIdentity.parse(contents.get(0), contents.get(1));
                        keys.updateIdentityCredentials(
                                identity.chain().toArray(X509Certificate[]::new), identity.key());
                        return identity;
                    },
                    settings.reloadPeriod(),
                    reloads));
            TlsServerCredentials.Builder tls = TlsServerCredentials.newBuilder().keyManager(keys);
            if (settings.tlsClientCa().isPresent()) {
                AdvancedTlsX509TrustManager trust = AdvancedTlsX509TrustManager.newBuilder()
                        .setVerification(AdvancedTlsX509TrustManager.Verification.CERTIFICATE_ONLY_VERIFICATION)
                        .build();
                watches.add(ReloadingFile.watch(
                        settings.tlsClientCa().get(),
                        "tls-client-ca",
                        content -> {
                            X509Certificate[] authorities = ServerIdentity.certificates(content);
                            trust.updateTrustCredentials(authorities);
                            return authorities;
                        },
                        settings.reloadPeriod(),
                        reloads));
                tls.trustManager(trust)
                        .clientAuth(
                                settings.clientAuth() == SecuritySettings.ClientAuth.REQUIRE
                                        ? TlsServerCredentials.ClientAuth.REQUIRE
                                        : TlsServerCredentials.ClientAuth.OPTIONAL);
            }
            return tls.build();
        } catch (GeneralSecurityException e) {
            throw new ConfigException("the TLS trust manager cannot be made: " + e.getMessage(), e);
        }
    }

    private static Optional<Authentication> authentication(
            SecuritySettings settings, ScheduledExecutorService reloads, List<AutoCloseable> watches) {
        List<Authenticator> authenticators = new ArrayList<>();
        if (settings.apiTokenFile().isPresent()) {
            ReloadingFile<java.util.Map<String, Principal>> tokens = ReloadingFile.watch(
                    settings.apiTokenFile().get(),
                    "api-token-file",
                    StaticTokenAuthenticator::parse,
                    settings.reloadPeriod(),
                    reloads);
            watches.add(tokens);
            authenticators.add(new StaticTokenAuthenticator(tokens::get));
        }
        if (settings.jwtJwks().isPresent()) {
            authenticators.add(new JwtAuthenticator(
                    jwks(settings.jwtJwks().get(), settings, reloads, watches),
                    settings.jwtAlgorithms(),
                    settings.jwtIssuer().orElseThrow(),
                    settings.jwtAudience().orElseThrow(),
                    settings.jwtClockSkew(),
                    settings.jwtPrincipalClaim(),
                    settings.jwtGroupsClaim()));
        }
        if (settings.tlsClientCa().isPresent()) {
            authenticators.add(new ClientCertificateAuthenticator());
        }
        return authenticators.isEmpty() ? Optional.empty() : Optional.of(new Authentication(authenticators));
    }

    private static JWKSource<SecurityContext> jwks(
            String location, SecuritySettings settings, ScheduledExecutorService reloads, List<AutoCloseable> watches) {
        if (location.startsWith("https:") || location.startsWith("http:")) {
            try {
                return JWKSourceBuilder.<SecurityContext>create(
                                URI.create(location).toURL())
                        .retrying(true)
                        .build();
            } catch (MalformedURLException | IllegalArgumentException e) {
                throw new ConfigException("jwt-jwks is not a URL: " + location, e);
            }
        }
        ReloadingFile<JWKSet> set = ReloadingFile.watch(
                Path.of(location),
                "jwt-jwks",
                content -> JWKSet.parse(new String(content, StandardCharsets.UTF_8)),
                settings.reloadPeriod(),
                reloads);
        watches.add(set);
        return JwtAuthenticator.publicKeys(set::get);
    }

    private static Optional<String> workspaceOf(Lifecycle lifecycle, String sandboxId) {
        try {
            return Optional.of(lifecycle.get(Commands.Target.byId(sandboxId)).workspace());
        } catch (GatewayException | IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    private static boolean recorded(Lifecycle lifecycle, String requestId, String principal) {
        try {
            lifecycle.operation(requestId, principal);
            return true;
        } catch (GatewayException | IllegalArgumentException e) {
            return false;
        }
    }

    /** Says, at every start, what an operator must know: where the gateway is open. */
    public static void warnIfExposed(SecuritySettings settings, String listenHost, String address) {
        if (settings.exposedInsecurely(listenHost)) {
            log.warn(
                    "INSECURE: --insecure is set and {} is reachable beyond loopback{}{}: anyone who reaches it may"
                            + " create, stop and delete sandboxes",
                    address,
                    settings.tls() ? "" : " without TLS",
                    settings.authenticates() ? "" : " without authentication");
        } else if (settings.insecure()) {
            log.warn("--insecure is set; it changes nothing here ({} is loopback or secured)", address);
        }
    }

    public ServerCredentials credentials() {
        return credentials;
    }

    public ServerInterceptor interceptor() {
        return interceptor;
    }

    @Override
    public void close() {
        closeAll(watches);
        reloads.shutdownNow();
    }

    private static void closeAll(List<AutoCloseable> watches) {
        for (AutoCloseable watch : watches) {
            try {
                watch.close();
            } catch (Exception e) {
                log.debug("closing a file watch failed", e);
            }
        }
    }
}
