package dev.sandgate.driver.host;

import static java.util.Objects.requireNonNull;

import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import io.grpc.Server;
import io.grpc.ServerCredentials;
import io.grpc.TlsServerCredentials;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * A running driver host: one SPI driver served over {@code sandgate.driver.v1} on a Unix socket (created owner-only)
 * or on TCP with mutual TLS.
 */
public final class DriverHost implements AutoCloseable {
    /** Where to listen. */
    public sealed interface Listen {
        /** A Unix socket at {@code path}: created with mode 0600, replacing a stale socket file. */
        record Unix(Path path) implements Listen {}

        /**
         * TCP, always with mutual TLS: the host's PEM certificate chain and PKCS#8 key, and the CA (PEM) its clients'
         * certificates must chain to. A client without such a certificate fails the TLS handshake.
         */
        record Tcp(String host, int port, Path certificate, Path key, Path trust) implements Listen {
            public Tcp {
                requireNonNull(host, "host is null");
                requireNonNull(certificate, "certificate is null");
                requireNonNull(key, "key is null");
                requireNonNull(trust, "trust is null");
            }
        }
    }

    private final Server server;
    private final HostedInstances instances;
    private final ExecutorService calls;
    private final Optional<EventLoopGroup> eventLoop;
    private final Optional<Path> socket;

    private DriverHost(
            Server server,
            HostedInstances instances,
            ExecutorService calls,
            Optional<EventLoopGroup> eventLoop,
            Optional<Path> socket) {
        this.server = server;
        this.instances = instances;
        this.calls = calls;
        this.eventLoop = eventLoop;
        this.socket = socket;
    }

    /** Starts serving {@code provider} with {@code config}. */
    public static DriverHost start(ComputeDriverProvider provider, DriverSettings config, Listen listen)
            throws IOException {
        requireNonNull(provider, "provider is null");
        requireNonNull(config, "config is null");
        requireNonNull(listen, "listen is null");
        var instances = new HostedInstances(provider, config);
        ExecutorService calls = Executors.newThreadPerTaskExecutor(
                Thread.ofVirtual().name("sandgate-driver-call-", 0).factory());
        var service = new DriverHostService(instances, calls);
        return switch (listen) {
            case Listen.Unix unix -> {
                EventLoopGroup group = new MultiThreadIoEventLoopGroup(
                        2,
                        Thread.ofPlatform()
                                .name("sandgate-driver-host-", 0)
                                .daemon(true)
                                .factory(),
                        EpollIoHandler.newFactory());
                Path path = unix.path().toAbsolutePath();
                // Bind inside a private directory, restrict the socket, then move it into place: the socket is never
                // reachable by others, not even between bind and chmod.
                Path parent = path.getParent();
                Files.createDirectories(parent);
                Path privateDirectory = Files.createTempDirectory(
                        parent,
                        ".sandgate-bind-",
                        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
                Path bound = privateDirectory.resolve("socket");
                Server server = NettyServerBuilder.forAddress(new DomainSocketAddress(bound.toString()))
                        .channelType(EpollServerDomainSocketChannel.class)
                        .bossEventLoopGroup(group)
                        .workerEventLoopGroup(group)
                        .addService(service)
                        .build()
                        .start();
                try {
                    Files.setPosixFilePermissions(bound, PosixFilePermissions.fromString("rw-------"));
                    if (Files.exists(path, LinkOption.NOFOLLOW_LINKS) && !Files.isDirectory(path)) {
                        Files.delete(path);
                    }
                    Files.move(bound, path, StandardCopyOption.ATOMIC_MOVE);
                    Files.delete(privateDirectory);
                } catch (IOException | UncheckedIOException e) {
                    server.shutdownNow();
                    var unused = group.shutdownGracefully();
                    throw e;
                }
                yield new DriverHost(server, instances, calls, Optional.of(group), Optional.of(path));
            }
            case Listen.Tcp tcp -> {
                NettyServerBuilder builder;
                try {
                    builder = NettyServerBuilder.forAddress(
                            new InetSocketAddress(tcp.host(), tcp.port()), mutualTls(tcp));
                } catch (IOException | RuntimeException e) {
                    // Netty parses the PEM files here: a wrong file fails before anything listens.
                    throw new DriverException(
                            DriverErrorCode.INVALID_ARGUMENT,
                            "--tls-certificate " + tcp.certificate() + ", --tls-key " + tcp.key() + ", --tls-trust "
                                    + tcp.trust() + ": cannot set up mutual TLS (expected a PEM certificate chain, its"
                                    + " PKCS#8 key and PEM CA certificates): " + e.getMessage(),
                            e);
                }
                Server server = builder.addService(service).build().start();
                yield new DriverHost(server, instances, calls, Optional.empty(), Optional.empty());
            }
        };
    }

    /** Client certificates required: a client without one, or with one of another CA, fails the handshake. */
    private static ServerCredentials mutualTls(Listen.Tcp tcp) throws IOException {
        return TlsServerCredentials.newBuilder()
                .keyManager(tcp.certificate().toFile(), tcp.key().toFile())
                .trustManager(tcp.trust().toFile())
                .clientAuth(TlsServerCredentials.ClientAuth.REQUIRE)
                .build();
    }

    /** The TCP port (useful with port 0); -1 for a Unix socket. */
    public int port() {
        return socket.isPresent() ? -1 : server.getPort();
    }

    /** Stops serving: ends open calls, closes every driver instance, removes the socket. */
    @Override
    public void close() {
        server.shutdownNow();
        try {
            server.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        instances.close();
        calls.shutdownNow();
        eventLoop.ifPresent(group -> {
            var unused = group.shutdownGracefully();
        });
        socket.ifPresent(path -> {
            try {
                Files.deleteIfExists(path);
            } catch (IOException e) {
                // a stale socket file is replaced at the next start
            }
        });
    }

    /** Blocks until the server stops. */
    public void awaitTermination() throws InterruptedException {
        server.awaitTermination();
    }
}
