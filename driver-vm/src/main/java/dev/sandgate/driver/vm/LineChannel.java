package dev.sandgate.driver.vm;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A line-oriented client of a QEMU unix socket (QMP, a serial port), with a deadline on every read. Not thread-safe.
 */
final class LineChannel implements AutoCloseable {
    private static final Duration WRITE_TIMEOUT = Duration.ofSeconds(5);

    private final SocketChannel channel;
    private final Selector selector;
    private final ByteBuffer buffer = ByteBuffer.allocate(8192);
    private final ByteArrayOutputStream pending = new ByteArrayOutputStream();

    private LineChannel(SocketChannel channel, Selector selector) {
        this.channel = channel;
        this.selector = selector;
    }

    static LineChannel connect(Path socket) throws IOException {
        SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            channel.connect(UnixDomainSocketAddress.of(socket));
            channel.configureBlocking(false);
            Selector selector = Selector.open();
            channel.register(selector, SelectionKey.OP_READ);
            return new LineChannel(channel, selector);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    /** Writes {@code text}; IOException if the peer does not take it within {@link #WRITE_TIMEOUT}. */
    void write(String text) throws IOException {
        ByteBuffer bytes = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
        long deadline = System.nanoTime() + WRITE_TIMEOUT.toNanos();
        while (bytes.hasRemaining()) {
            if (channel.write(bytes) == 0) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IOException("the peer took no input within " + WRITE_TIMEOUT);
                }
                Thread.onSpinWait();
            }
        }
    }

    /** The next line (without its line end), waiting at most {@code timeout}; IOException at the deadline or EOF. */
    String readLine(Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            byte[] bytes = pending.toByteArray();
            int newline = indexOf(bytes, (byte) '\n');
            if (newline >= 0) {
                int end = newline > 0 && bytes[newline - 1] == '\r' ? newline - 1 : newline;
                pending.reset();
                pending.write(bytes, newline + 1, bytes.length - newline - 1);
                return new String(bytes, 0, end, StandardCharsets.UTF_8);
            }
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                throw new IOException("no answer within " + timeout);
            }
            selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(remaining)));
            selector.selectedKeys().clear();
            buffer.clear();
            int read = channel.read(buffer);
            if (read < 0) {
                throw new IOException("the socket was closed");
            }
            pending.write(buffer.array(), 0, read);
        }
    }

    private static int indexOf(byte[] bytes, byte value) {
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] == value) {
                return i;
            }
        }
        return -1;
    }

    @Override
    public void close() {
        try {
            selector.close();
        } catch (IOException e) {
            // nothing to release
        }
        try {
            channel.close();
        } catch (IOException e) {
            // nothing to release
        }
    }
}
