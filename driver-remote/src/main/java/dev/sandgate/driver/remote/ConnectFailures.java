package dev.sandgate.driver.remote;

import dev.sandgate.driver.v1.ComputeDriverGrpc;
import dev.sandgate.driver.v1.HandshakeRequest;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.security.GeneralSecurityException;
import java.security.cert.CertificateException;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;

/**
 * Why the handshake could not reach the remote driver, in words an operator can act on: which side's certificate the
 * TLS handshake refused, rather than gRPC's log of connection attempts. A handshake that waits for the channel to be
 * ready ends {@code DEADLINE_EXCEEDED} without the transport's error; a call that does not wait gets it at once.
 */
final class ConnectFailures {
    private ConnectFailures() {}

    static DriverException describe(RemoteSettings settings, ManagedChannel channel, StatusRuntimeException failure) {
        String what = "remote driver at " + settings.target() + ", handshake";
        Status.Code code = failure.getStatus().getCode();
        if (code != Status.Code.DEADLINE_EXCEEDED && code != Status.Code.UNAVAILABLE) {
            return DriverErrors.fromThrowable(failure, what);
        }
        Optional<String> reason = explain(failure);
        if (reason.isEmpty() && channel.getState(false) == ConnectivityState.TRANSIENT_FAILURE) {
            reason = transportFailure(channel).flatMap(ConnectFailures::explain);
        }
        return reason.map(text -> new DriverException(
                        DriverErrorCode.UNAVAILABLE, "remote driver at " + settings.target() + ": " + text, failure))
                .orElseGet(() -> DriverErrors.fromThrowable(failure, what));
    }

    /** The channel's last connection error: a call that does not wait for a ready channel fails with it. */
    private static Optional<StatusRuntimeException> transportFailure(ManagedChannel channel) {
        try {
            ComputeDriverGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(5, TimeUnit.SECONDS)
                    .handshake(HandshakeRequest.getDefaultInstance());
            return Optional.empty();
        } catch (StatusRuntimeException e) {
            return Optional.of(e);
        }
    }

    private static Optional<String> explain(Throwable failure) {
        boolean tls = false;
        boolean untrustedServer = false;
        String deepest = null;
        for (Throwable cause = failure.getCause(); cause != null; cause = cause.getCause()) {
            tls |= cause instanceof SSLException || cause.getClass().getName().contains("Ssl");
            untrustedServer |= cause instanceof CertificateException || cause instanceof GeneralSecurityException;
            if (cause.getMessage() != null) {
                deepest = cause.getMessage();
            }
        }
        if (deepest == null) {
            return Optional.empty();
        }
        String alert = deepest.toUpperCase(Locale.ROOT);
        if (alert.contains("CERTIFICATE_REQUIRED")
                || alert.contains("BAD_CERTIFICATE")
                || alert.contains("UNKNOWN_CA")
                || alert.contains("CERTIFICATE_UNKNOWN")) {
            return Optional.of("the TLS handshake failed: the driver refused this gateway's client certificate ("
                    + RemoteSettings.TLS_CERTIFICATE + "), which must chain to the CA the driver trusts"
                    + " (driver-host: --tls-trust) [" + deepest + "]");
        }
        if (untrustedServer) {
            return Optional.of("the TLS handshake failed: the driver's certificate does not chain to "
                    + RemoteSettings.TLS_TRUST + " or does not name the target's host [" + deepest + "]");
        }
        if (tls) {
            return Optional.of("the TLS handshake failed [" + deepest + "]");
        }
        return Optional.empty();
    }
}
