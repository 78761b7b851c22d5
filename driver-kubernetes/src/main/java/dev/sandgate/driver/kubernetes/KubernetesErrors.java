package dev.sandgate.driver.kubernetes;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.KubernetesClientTimeoutException;
import java.net.http.HttpTimeoutException;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/** Turns fabric8's exceptions into {@link DriverException}s, for the API answers that need no special handling. */
final class KubernetesErrors {
    static final int CONFLICT = 409;
    static final int NOT_FOUND = 404;

    private KubernetesErrors() {}

    /** Runs {@code call}, translating a {@link KubernetesClientException}; {@code action} says what was attempted. */
    static <T> T call(String action, Supplier<T> call) {
        try {
            return call.get();
        } catch (KubernetesClientException e) {
            throw translate(action, e);
        }
    }

    static DriverException translate(String action, KubernetesClientException e) {
        if (e instanceof KubernetesClientTimeoutException || hasTimeoutCause(e)) {
            return new DriverException(
                    DriverErrorCode.DEADLINE_EXCEEDED, "the Kubernetes API did not answer in time to " + action, e);
        }
        String reason = "the Kubernetes API refused to " + action + " (HTTP " + e.getCode() + "): " + message(e);
        return switch (e.getCode()) {
            case 400, 422 -> new DriverException(DriverErrorCode.INVALID_ARGUMENT, reason, e);
            case 401, 403 ->
                new DriverException(
                        DriverErrorCode.UNAVAILABLE,
                        reason + " (check the gateway's credentials and RBAC: docs/drivers/kubernetes.md)",
                        e);
            case CONFLICT -> new DriverException(DriverErrorCode.ABORTED, reason, e);
            case 0 ->
                new DriverException(
                        DriverErrorCode.UNAVAILABLE,
                        "cannot reach the Kubernetes API to " + action + ": " + message(e),
                        e);
            default -> new DriverException(DriverErrorCode.UNAVAILABLE, reason, e);
        };
    }

    /** The API server's message, without the request body fabric8 may append. */
    static String message(KubernetesClientException e) {
        if (e.getStatus() != null && e.getStatus().getMessage() != null) {
            return e.getStatus().getMessage();
        }
        return String.valueOf(e.getMessage());
    }

    private static boolean hasTimeoutCause(Throwable e) {
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause instanceof TimeoutException || cause instanceof HttpTimeoutException) {
                return true;
            }
        }
        return false;
    }
}
