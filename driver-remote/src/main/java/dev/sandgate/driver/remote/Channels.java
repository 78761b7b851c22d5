package dev.sandgate.driver.remote;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import io.grpc.ManagedChannel;
import io.grpc.TlsChannelCredentials;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Set;

/** Opens the channel to a remote driver: a Unix socket that must be owner-only, or TCP with mutual TLS. */
public final class Channels {
    /** Shared by every channel over a Unix socket: daemon threads, created at first use. */
    private static final class UnixEventLoop {
        static final EventLoopGroup GROUP = new MultiThreadIoEventLoopGroup(
                1,
                Thread.ofPlatform()
                        .name("sandgate-remote-driver-", 0)
                        .daemon(true)
                        .factory(),
                EpollIoHandler.newFactory());
    }

    private Channels() {}

    /** A channel to {@code settings.target()}; the caller shuts it down. */
    public static ManagedChannel open(RemoteSettings settings) {
        return switch (settings.target()) {
            case RemoteSettings.Endpoint.Unix unix -> {
                requireOwnerOnly(unix);
                if (!Epoll.isAvailable()) {
                    throw new DriverException(
                            DriverErrorCode.UNAVAILABLE,
                            RemoteSettings.TARGET + ": Unix sockets need Linux epoll: " + Epoll.unavailabilityCause());
                }
                yield NettyChannelBuilder.forAddress(
                                new DomainSocketAddress(unix.path().toString()))
                        .eventLoopGroup(UnixEventLoop.GROUP)
                        .channelType(EpollDomainSocketChannel.class)
                        .usePlaintext()
                        .build();
            }
            case RemoteSettings.Endpoint.Tcp tcp -> {
                RemoteSettings.Tls tls = settings.tls().orElseThrow();
                TlsChannelCredentials.Builder credentials = TlsChannelCredentials.newBuilder();
                try {
                    credentials.keyManager(tls.certificate().toFile(), tls.key().toFile());
                    credentials.trustManager(tls.trust().toFile());
                } catch (IOException e) {
                    throw DriverException.invalidArgument(
                            RemoteSettings.TLS_CERTIFICATE, "cannot read the TLS files: " + e.getMessage());
                }
                yield NettyChannelBuilder.forAddress(tcp.host(), tcp.port(), credentials.build())
                        .build();
            }
        };
    }

    /**
     * A socket that others may write to could be anyone's: refuse it. The driver host creates it owner-only (see
     * docs/drivers/remote.md).
     */
    private static void requireOwnerOnly(RemoteSettings.Endpoint.Unix unix) {
        try {
            if (!Files.exists(unix.path(), LinkOption.NOFOLLOW_LINKS)) {
                throw new DriverException(
                        DriverErrorCode.UNAVAILABLE, RemoteSettings.TARGET + ": no socket at " + unix.path());
            }
            Set<PosixFilePermission> permissions =
                    Files.getPosixFilePermissions(unix.path(), LinkOption.NOFOLLOW_LINKS);
            for (PosixFilePermission permission : permissions) {
                switch (permission) {
                    case OWNER_READ, OWNER_WRITE, OWNER_EXECUTE -> {}
                    case GROUP_READ, GROUP_WRITE, GROUP_EXECUTE, OTHERS_READ, OTHERS_WRITE, OTHERS_EXECUTE ->
                        throw DriverException.invalidArgument(
                                RemoteSettings.TARGET,
                                unix.path() + " must be accessible to its owner only, it is " + permissions);
                }
            }
            var owner = Files.getOwner(unix.path(), LinkOption.NOFOLLOW_LINKS).getName();
            var self = System.getProperty("user.name");
            if (!owner.equals(self)) {
                throw DriverException.invalidArgument(
                        RemoteSettings.TARGET, unix.path() + " belongs to " + owner + ", not to " + self);
            }
        } catch (IOException e) {
            throw new DriverException(
                    DriverErrorCode.UNAVAILABLE, RemoteSettings.TARGET + ": cannot read " + unix.path() + ": " + e);
        }
    }
}
