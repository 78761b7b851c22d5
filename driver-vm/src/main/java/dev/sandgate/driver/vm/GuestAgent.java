package dev.sandgate.driver.vm;

import static java.util.Objects.requireNonNull;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A connection to the guest agent of one QEMU process: the virtio-serial port {@value #PORT}, reached through {@code
 * /proc/<pid>/cwd/agent.sock} of that process (so a VM launched later in the same directory is never reached). The
 * guest side is the image's {@code sandgate-agent}: one frame per line, fields separated by spaces, bytes in base64
 * (the frames are listed in docs/drivers/vm.md). The agent answers {@code HELLO} with the generation on its kernel
 * command line, and refuses a command for another generation.
 *
 * <p>QEMU takes one client per socket at a time, so the driver shares one connection per process among the commands
 * that run in it ({@link Registry}) and closes it when none is left. A reader thread hands each guest frame to the
 * command it names, in order; frames of unknown commands (of an earlier connection) are dropped.
 */
final class GuestAgent implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(GuestAgent.class);

    /** The name of the guest agent's virtio-serial port. */
    static final String PORT = "sandgate.agent";

    /** Receives the frames of one command, on the connection's reader thread. */
    interface Frames {
        /** One frame: its verb and the fields after the command's id. */
        void frame(String verb, List<String> fields);

        /** The connection ended: frames of this command will never come. */
        void disconnected(IOException cause);
    }

    private final ProcessIdentity process;
    private final SocketChannel channel;
    private final Map<String, Frames> commands = new ConcurrentHashMap<>();
    private final CompletableFuture<Long> hello = new CompletableFuture<>();
    private final String nonce = newId();
    private final Object writing = new Object();
    private int users; // guarded by the Registry
    private volatile boolean closed;

    private GuestAgent(ProcessIdentity process, SocketChannel channel) {
        this.process = process;
        this.channel = channel;
    }

    /** A fresh id for a command or a handshake: 16 lower-case hex digits. */
    static String newId() {
        return HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
    }

    /**
     * Connects to the agent of {@code process} and waits for its answer to {@code HELLO}, which carries the
     * generation the guest booted with ({@link #generation()}).
     *
     * @throws IOException if the process is gone, the socket refuses, or the agent does not answer within {@code
     *     timeout}
     */
    private static GuestAgent connect(ProcessIdentity process, Duration timeout) throws IOException {
        if (!process.alive()) {
            throw new IOException("QEMU (" + process + ") is gone");
        }
        SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
        var agent = new GuestAgent(process, channel);
        try {
            channel.connect(UnixDomainSocketAddress.of(process.inWorkingDirectory(StateStore.AGENT_SOCKET)));
            Thread.ofPlatform()
                    .daemon()
                    .name("sandgate-vm-agent-" + process.pid())
                    .start(agent::read);
            agent.send("HELLO " + agent.nonce);
            agent.hello.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            agent.close();
            throw new IOException("the guest agent did not answer within " + timeout, e);
        } catch (ExecutionException e) {
            agent.close();
            throw new IOException(
                    "the guest agent's connection ended: " + e.getCause().getMessage(), e);
        } catch (InterruptedException e) {
            agent.close();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while connecting to the guest agent", e);
        } catch (IOException | RuntimeException e) {
            agent.close();
            throw e;
        }
        return agent;
    }

    /** The generation the guest said it booted with. */
    long generation() {
        return hello.join();
    }

    ProcessIdentity process() {
        return process;
    }

    /** Routes the frames naming {@code id} to {@code frames} until {@link #forget}. */
    void register(String id, Frames frames) {
        commands.put(id, frames);
    }

    void forget(String id) {
        commands.remove(id);
    }

    /** Sends one frame (a line without its end). */
    void send(String frame) throws IOException {
        if (closed) {
            throw new IOException("the connection to the guest agent is closed");
        }
        ByteBuffer bytes = ByteBuffer.wrap((frame + "\n").getBytes(StandardCharsets.US_ASCII));
        synchronized (writing) {
            while (bytes.hasRemaining()) {
                channel.write(bytes);
            }
        }
    }

    private void read() {
        IOException cause = new IOException("the guest agent closed the connection (the VM ended)");
        try (var in = new BufferedReader(
                new InputStreamReader(Channels.newInputStream(channel), StandardCharsets.US_ASCII))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                dispatch(line);
            }
        } catch (IOException e) {
            cause = e;
        } finally {
            closed = true;
            hello.completeExceptionally(cause);
            for (Frames frames : List.copyOf(commands.values())) {
                frames.disconnected(cause);
            }
            commands.clear();
        }
    }

    private void dispatch(String line) {
        List<String> fields = List.of(line.split(" ", -1));
        if (fields.size() < 2) {
            return;
        }
        String verb = fields.get(0);
        String id = fields.get(1);
        if (verb.equals("HELLO")) {
            if (id.equals(nonce) && fields.size() == 3) {
                parseGeneration(fields.get(2)).ifPresent(hello::complete);
            }
            return;
        }
        Frames frames = commands.get(id);
        if (frames != null) {
            try {
                frames.frame(verb, fields.subList(2, fields.size()));
            } catch (RuntimeException e) {
                LOG.warn("handling the guest agent's frame {} of command {} failed", verb, id, e);
            }
        }
    }

    private static Optional<Long> parseGeneration(String text) {
        try {
            return Optional.of(Long.parseLong(text));
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            channel.close();
        } catch (IOException e) {
            // nothing to release
        }
    }

    /**
     * The open connections of one driver, one per QEMU process, shared by the commands running in it and closed when
     * the last one is released.
     */
    static final class Registry {
        private final Map<ProcessIdentity, GuestAgent> open = new ConcurrentHashMap<>();
        private final Duration timeout;

        Registry(Duration timeout) {
            this.timeout = requireNonNull(timeout, "timeout is null");
        }

        /**
         * The connection to the agent of {@code process}, opened if needed; {@link #release} it when done.
         *
         * @throws IOException if it cannot be opened
         */
        synchronized GuestAgent acquire(ProcessIdentity process) throws IOException {
            GuestAgent agent = open.get(process);
            if (agent == null || agent.closed) {
                agent = connect(process, timeout);
                open.put(process, agent);
            }
            agent.users++;
            return agent;
        }

        synchronized void release(GuestAgent agent) {
            agent.users--;
            if (agent.users <= 0) {
                open.remove(agent.process, agent);
                agent.close();
            }
        }

        synchronized void closeAll() {
            open.values().forEach(GuestAgent::close);
            open.clear();
        }
    }
}
