package dev.sandgate.driver.container;

import com.github.dockerjava.api.exception.BadRequestException;
import com.github.dockerjava.api.exception.ConflictException;
import com.github.dockerjava.api.exception.DockerClientException;
import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.exception.InternalServerErrorException;
import com.github.dockerjava.api.exception.NotAcceptableException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.exception.NotModifiedException;
import com.github.dockerjava.api.exception.UnauthorizedException;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Maps what docker-java throws to {@link DriverException} codes, in one place. */
public final class EngineErrors {
    private static final Pattern JSON_MESSAGE =
            Pattern.compile("\\{\\s*\"message\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");

    private EngineErrors() {}

    /**
     * The {@link DriverException} for {@code failure}, raised while {@code action} (e.g. {@code "stopping container
     * 3f2a..."}).
     */
    public static DriverException map(RuntimeException failure, String action) {
        if (failure instanceof DriverException driverException) {
            return driverException;
        }
        String reason = reason(failure);
        DriverErrorCode code = codeOf(failure);
        return new DriverException(code, action + ": " + reason, failure);
    }

    static DriverErrorCode codeOf(Throwable failure) {
        return switch (failure) {
            case NotFoundException e -> DriverErrorCode.NOT_FOUND;
            case ConflictException e -> DriverErrorCode.ABORTED;
            case BadRequestException e -> DriverErrorCode.INVALID_ARGUMENT;
            case NotModifiedException e -> DriverErrorCode.FAILED_PRECONDITION;
            case UnauthorizedException e -> DriverErrorCode.UNAVAILABLE;
            case NotAcceptableException e -> DriverErrorCode.INVALID_ARGUMENT;
            case InternalServerErrorException e -> DriverErrorCode.INTERNAL;
            case DockerException e -> e.getHttpStatus() == 403 ? DriverErrorCode.UNAVAILABLE : DriverErrorCode.INTERNAL;
            default -> transportCode(failure);
        };
    }

    private static DriverErrorCode transportCode(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof SocketTimeoutException || cause instanceof InterruptedIOException) {
                return DriverErrorCode.DEADLINE_EXCEEDED;
            }
            if (cause instanceof IOException) {
                return DriverErrorCode.UNAVAILABLE;
            }
        }
        return DriverErrorCode.INTERNAL;
    }

    /** The engine's own words for {@code failure}: the {@code message} of its JSON error body when it sent one. */
    public static String reason(Throwable failure) {
        String message = failure.getMessage();
        if (failure instanceof DockerException && message != null) {
            Matcher matcher = JSON_MESSAGE.matcher(message);
            if (matcher.find()) {
                return matcher.group(1).replace("\\\"", "\"").replace("\\\\", "\\");
            }
            return message.replaceFirst("^Status \\d+: ", "").strip();
        }
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof IOException && cause.getMessage() != null) {
                return cause.getClass().getSimpleName() + ": " + cause.getMessage();
            }
        }
        return message == null ? failure.getClass().getSimpleName() : message;
    }

    /**
     * A pull of {@code image} failed with {@code failure}. The engine's own answer (an HTTP error, or an error in the
     * pull's stream: no such image, a registry it cannot reach or that refuses it) is permanent: INVALID_ARGUMENT
     * naming {@code spec.image}. Only a failure to talk to the engine itself is UNAVAILABLE, to be retried.
     */
    public static DriverException pullFailed(String image, RuntimeException failure) {
        if (failure instanceof DriverException driverException) {
            return driverException;
        }
        boolean engineAnswered = failure instanceof DockerException || failure instanceof DockerClientException;
        String reason = failure instanceof DockerClientException ? stripPrefix(failure.getMessage()) : reason(failure);
        return pullFailed(
                image, engineAnswered ? DriverErrorCode.INVALID_ARGUMENT : transportCode(failure), reason, failure);
    }

    /** A pull of {@code image} failed for {@code reason}, as the engine reported it. */
    public static DriverException pullFailed(String image, DriverErrorCode code, String reason, Throwable cause) {
        String problem = "image '" + image + "' is not on the engine and pulling it failed: " + reason;
        return new DriverException(
                code, code == DriverErrorCode.INVALID_ARGUMENT ? "spec.image: " + problem : problem, cause);
    }

    private static String stripPrefix(String message) {
        if (message == null) {
            return "the engine gave no reason";
        }
        return message.replaceFirst("^Could not pull image: ", "");
    }

    /** The engine cannot be reached at the configured host. */
    static DriverException unreachable(String engineName, ContainerDriverSettings settings, RuntimeException failure) {
        return new DriverException(
                DriverErrorCode.UNAVAILABLE,
                "cannot reach the " + engineName + " at " + settings.host() + " (from " + settings.hostSource() + "): "
                        + reason(failure),
                failure);
    }
}
