package dev.sandgate.cli;

import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.TlsChannelCredentials;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/**
 * The client's side of the gateway's security: TLS (trusting a CA, presenting a client certificate for mTLS) and a
 * bearer token (a JWT or a static API token) sent with every call. Never prints a token.
 */
final class ClientSecurity {
    @Option(
            names = "--tls-ca",
            scope = ScopeType.INHERIT,
            paramLabel = "FILE",
            description = "Connect with TLS, trusting the gateway certificate's CA in FILE (PEM; env SANDGATE_TLS_CA).",
            defaultValue = "${env:SANDGATE_TLS_CA}")
    Path tlsCa;

    @Option(
            names = "--tls-cert",
            scope = ScopeType.INHERIT,
            paramLabel = "FILE",
            description = "Client certificate chain (PEM) for mTLS, with --tls-key (env SANDGATE_TLS_CERT).",
            defaultValue = "${env:SANDGATE_TLS_CERT}")
    Path tlsCert;

    @Option(
            names = "--tls-key",
            scope = ScopeType.INHERIT,
            paramLabel = "FILE",
            description = "The client certificate's PKCS#8 private key (PEM; env SANDGATE_TLS_KEY).",
            defaultValue = "${env:SANDGATE_TLS_KEY}")
    Path tlsKey;

    @Option(
            names = "--token",
            scope = ScopeType.INHERIT,
            paramLabel = "TOKEN",
            description = "Bearer token (JWT or API token) for every call; prefer --token-file or SANDGATE_TOKEN, as"
                    + " a command line is visible to other users.")
    String token;

    @Option(
            names = "--token-file",
            scope = ScopeType.INHERIT,
            paramLabel = "FILE",
            description = "Read the bearer token from FILE (e.g. a Kubernetes service-account token).")
    Path tokenFile;

    /** The token to send: --token, else --token-file, else SANDGATE_TOKEN. */
    Optional<String> token(Map<String, String> environment) {
        if (token != null && !token.isBlank()) {
            return Optional.of(token.strip());
        }
        if (tokenFile != null) {
            try {
                String text =
                        Files.readString(tokenFile, StandardCharsets.UTF_8).strip();
                if (text.isEmpty()) {
                    throw new UncheckedIOException(new IOException("--token-file " + tokenFile + " is empty"));
                }
                return Optional.of(text);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read --token-file " + tokenFile + ": " + e, e);
            }
        }
        return Optional.ofNullable(environment.get("SANDGATE_TOKEN"))
                .map(String::strip)
                .filter(t -> !t.isEmpty());
    }

    /** Whether the channel must use TLS. */
    boolean tls() {
        return tlsCa != null || tlsCert != null;
    }

    /** A TLS channel to {@code target}, trusting --tls-ca (or the system's CAs), presenting --tls-cert if given. */
    ManagedChannel channel(String target) {
        if ((tlsCert == null) != (tlsKey == null)) {
            throw new IllegalArgumentException("--tls-cert and --tls-key go together");
        }
        try {
            TlsChannelCredentials.Builder tls = TlsChannelCredentials.newBuilder();
            if (tlsCa != null) {
                tls.trustManager(tlsCa.toFile());
            }
            if (tlsCert != null) {
                tls.keyManager(tlsCert.toFile(), tlsKey.toFile());
            }
            ChannelCredentials credentials = tls.build();
            return Grpc.newChannelBuilder(target, credentials).build();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the TLS files: " + e.getMessage(), e);
        }
    }
}
