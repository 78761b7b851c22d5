package dev.sandgate.driver.container.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A relay on a loopback TCP port to an engine's unix socket, so that a test can cut every connection a driver holds
 * (as an engine restart would) while the engine keeps running: {@link #dropConnections()}. It relays bytes only; the
 * engine answers everything.
 */
public final class EngineRelay implements AutoCloseable {
    private final Path socket;
    private final ServerSocketChannel server;
    private final List<SocketChannel> open = new CopyOnWriteArrayList<>();
    private final Thread acceptor;
    private volatile boolean closed;

    /** Starts relaying from a free loopback port to {@code engineHost} ({@code unix:///path}). */
    public EngineRelay(String engineHost) {
        URI uri = URI.create(engineHost);
        if (!"unix".equals(uri.getScheme())) {
            throw new IllegalArgumentException("the relay forwards to a unix socket, got " + engineHost);
        }
        this.socket = Path.of(uri.getPath());
        try {
            server = ServerSocketChannel.open();
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        acceptor = Thread.ofPlatform().daemon().name("engine-relay").start(this::accept);
    }

    /** The relay's address for a driver: {@code tcp://127.0.0.1:<port>}. */
    public String host() {
        try {
            InetSocketAddress address = (InetSocketAddress) server.getLocalAddress();
            return "tcp://" + address.getAddress().getHostAddress() + ":" + address.getPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Cuts every connection relayed so far; new connections are relayed as before. */
    public void dropConnections() {
        for (SocketChannel channel : open) {
            closeQuietly(channel);
        }
        open.clear();
    }

    private void accept() {
        while (!closed) {
            try {
                SocketChannel client = server.accept();
                SocketChannel engine = SocketChannel.open(StandardProtocolFamily.UNIX);
                engine.connect(UnixDomainSocketAddress.of(socket));
                open.add(client);
                open.add(engine);
                Thread.ofPlatform().daemon().name("engine-relay-up").start(() -> pump(client, engine));
                Thread.ofPlatform().daemon().name("engine-relay-down").start(() -> pump(engine, client));
            } catch (IOException e) {
                if (!closed) {
                    throw new UncheckedIOException(e);
                }
            }
        }
    }

    private void pump(SocketChannel from, SocketChannel to) {
        ByteBuffer buffer = ByteBuffer.allocate(64 * 1024);
        try {
            while (from.read(buffer) >= 0) {
                buffer.flip();
                while (buffer.hasRemaining()) {
                    to.write(buffer);
                }
                buffer.clear();
            }
        } catch (IOException e) {
            // One side closed: end the pair.
        } finally {
            closeQuietly(from);
            closeQuietly(to);
            open.remove(from);
            open.remove(to);
        }
    }

    private static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException e) {
            // Closing a broken channel: nothing to do.
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            // The acceptor ends either way.
        }
        dropConnections();
        try {
            acceptor.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
