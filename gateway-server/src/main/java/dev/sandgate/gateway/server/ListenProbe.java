package dev.sandgate.gateway.server;

import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.Locale;
import java.util.Optional;

/**
 * Checks that the gateway can listen where it is told to before it opens and recovers its store, so that a busy port
 * is reported at once and in words (the server's own bind error comes later, as {@code /127.0.0.1:7443}).
 */
final class ListenProbe {
    private ListenProbe() {}

    /** Why nothing can listen on {@code host:port}, or empty when a listener could bind there just now. */
    static Optional<String> problem(String host, int port) {
        if (port == 0) {
            return Optional.empty();
        }
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(host, port));
            return Optional.empty();
        } catch (BindException e) {
            String message = String.valueOf(e.getMessage()).toLowerCase(Locale.ROOT);
            return Optional.of(message
                    + (message.contains("in use") ? " (another gateway or another program listens there)" : ""));
        } catch (IOException | RuntimeException e) {
            return Optional.of(rootMessage(e));
        }
    }

    /** The message of {@code failure}'s innermost cause, which says what went wrong without the wrapping. */
    static String rootMessage(Throwable failure) {
        Throwable root = failure;
        while (root.getCause() != null && !root.equals(root.getCause())) {
            root = root.getCause();
        }
        return root.getMessage() != null ? root.getMessage() : root.getClass().getSimpleName();
    }
}
