package dev.sandgate.driver.container;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One hijacked connection to the engine's API (an exec start): the request is sent, the engine upgrades the
 * connection, and from then on it carries the command's standard input one way and its output the other.
 *
 * <p>docker-java's transports copy standard input but never half-close the connection, so the command never sees the
 * end of its input (a {@code cat} would never end). This connection closes its write side on {@link #closeOutput},
 * which both engines take as the end of standard input. It speaks plain HTTP over {@code unix://} and {@code tcp://}
 * hosts; hosts that need TLS are not supported (the driver does not claim exec for them).
 */
final class EngineAttach implements AutoCloseable {
    private static final Pattern JSON_MESSAGE = Pattern.compile("\"message\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");
    private static final int MAX_HEADER_BYTES = 64 * 1024;
    private static final int MAX_ERROR_BYTES = 8 * 1024;

    private final SocketChannel channel;
    private final InputStream input;
    private final OutputStream output;

    private EngineAttach(SocketChannel channel, InputStream input, OutputStream output) {
        this.channel = channel;
        this.input = input;
        this.output = output;
    }

    /** Whether a connection like this can be opened to {@code settings}' host. */
    static boolean supports(ContainerDriverSettings settings) {
        String scheme = settings.host().getScheme();
        return settings.tlsCertPath().isEmpty() && (scheme.equals("unix") || scheme.equals("tcp"));
    }

    /**
     * Sends {@code POST path} with the JSON {@code body} and returns once the engine has upgraded the connection.
     *
     * @param timeout how long the engine may take to answer the request
     * @throws DriverException with the engine's reason: NOT_FOUND (404), FAILED_PRECONDITION (409: the container does
     *     not run), INVALID_ARGUMENT (400), INTERNAL (other answers), UNAVAILABLE (the engine cannot be reached),
     *     DEADLINE_EXCEEDED (no answer in time)
     */
    static EngineAttach post(ContainerDriverSettings settings, String path, String body, Duration timeout) {
        requireNonNull(path, "path is null");
        URI host = settings.host();
        SocketChannel channel;
        try {
            channel = host.getScheme().equals("unix")
                    ? SocketChannel.open(UnixDomainSocketAddress.of(host.getPath()))
                    : SocketChannel.open(new InetSocketAddress(host.getHost(), host.getPort()));
        } catch (IOException e) {
            throw new DriverException(
                    DriverErrorCode.UNAVAILABLE, "cannot connect to the engine at " + host + ": " + e.getMessage(), e);
        }
        // A blocking channel has no read timeout: a watchdog closes it if the engine does not answer in time.
        var watchdog = new CompletableFuture<Void>();
        CompletableFuture.delayedExecutor(timeout.toMillis(), TimeUnit.MILLISECONDS)
                .execute(() -> {
                    if (!watchdog.isDone()) {
                        closeQuietly(channel);
                    }
                });
        try {
            InputStream input = new BufferedInputStream(Channels.newInputStream(channel));
            OutputStream output = Channels.newOutputStream(channel);
            byte[] content = body.getBytes(StandardCharsets.UTF_8);
            String request = "POST /v" + settings.apiVersion() + path + " HTTP/1.1\r\n"
                    + "Host: " + (host.getScheme().equals("unix") ? "docker" : host.getAuthority()) + "\r\n"
                    + "User-Agent: sandgate\r\n"
                    + "Content-Type: application/json\r\n"
                    + "Connection: Upgrade\r\n"
                    + "Upgrade: tcp\r\n"
                    + "Content-Length: " + content.length + "\r\n\r\n";
            output.write(request.getBytes(StandardCharsets.US_ASCII));
            output.write(content);
            output.flush();
            String header = readHeader(input);
            int status = status(header);
            if (status == 101 || status == 200) {
                watchdog.complete(null);
                return new EngineAttach(channel, input, output);
            }
            String reason = reason(header, input);
            watchdog.complete(null);
            closeQuietly(channel);
            throw new DriverException(codeOf(status), "the engine answered " + status + ": " + reason);
        } catch (IOException e) {
            boolean timedOut = !watchdog.isDone();
            watchdog.complete(null);
            closeQuietly(channel);
            throw new DriverException(
                    timedOut && !channel.isOpen() ? DriverErrorCode.DEADLINE_EXCEEDED : DriverErrorCode.UNAVAILABLE,
                    "the engine at " + host + " did not answer " + path + ": " + e.getMessage(),
                    e);
        }
    }

    /** The output the engine sends. */
    InputStream input() {
        return input;
    }

    /** Writes to the command's standard input. */
    void write(byte[] data) throws IOException {
        synchronized (output) {
            output.write(data);
            output.flush();
        }
    }

    /** Ends the command's standard input: closes the write side of the connection. */
    void closeOutput() throws IOException {
        synchronized (output) {
            channel.shutdownOutput();
        }
    }

    @Override
    public void close() {
        closeQuietly(channel);
    }

    private static String readHeader(InputStream input) throws IOException {
        var header = new ByteArrayOutputStream();
        int matched = 0;
        byte[] end = {'\r', '\n', '\r', '\n'};
        while (matched < end.length) {
            int next = input.read();
            if (next < 0) {
                throw new IOException("the connection closed before the engine answered");
            }
            header.write(next);
            matched = next == end[matched] ? matched + 1 : (next == '\r' ? 1 : 0);
            if (header.size() > MAX_HEADER_BYTES) {
                throw new IOException("the engine's answer has no end of header");
            }
        }
        return header.toString(StandardCharsets.ISO_8859_1);
    }

    private static int status(String header) throws IOException {
        String[] statusLine = header.split("\r\n", 2)[0].split(" ", 3);
        try {
            return Integer.parseInt(statusLine[1]);
        } catch (ArrayIndexOutOfBoundsException | NumberFormatException e) {
            throw new IOException("not an HTTP answer: " + header.split("\r\n", 2)[0], e);
        }
    }

    /** The engine's message from an error answer's JSON body (read up to its Content-Length). */
    private static String reason(String header, InputStream input) throws IOException {
        Matcher length = Pattern.compile("(?im)^content-length:\\s*(\\d+)").matcher(header);
        byte[] body = length.find()
                ? input.readNBytes((int) Math.min(MAX_ERROR_BYTES, Long.parseLong(length.group(1))))
                : new byte[0];
        String text = new String(body, StandardCharsets.UTF_8);
        Matcher message = JSON_MESSAGE.matcher(text);
        if (message.find()) {
            return message.group(1).replace("\\\"", "\"").replace("\\\\", "\\");
        }
        return text.isBlank() ? header.split("\r\n", 2)[0] : text.strip();
    }

    private static DriverErrorCode codeOf(int status) {
        return switch (status) {
            case 400 -> DriverErrorCode.INVALID_ARGUMENT;
            case 404 -> DriverErrorCode.NOT_FOUND;
            case 409 -> DriverErrorCode.FAILED_PRECONDITION;
            default -> DriverErrorCode.INTERNAL;
        };
    }

    private static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException e) {
            // nothing more to release
        }
    }
}
