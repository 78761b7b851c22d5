package dev.sandgate.driver.remote;

import dev.sandgate.spi.DriverSettings;
import io.grpc.BindableService;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/** A fake remote driver on a Unix socket: the service a test gives it, served until closed. */
record FakeDriverServer(EventLoopGroup group, Server server, Path socket) implements AutoCloseable {
    /** Serves {@code service} on {@code socket}, whose file gets {@code permissions} ("rw-------"). */
    static FakeDriverServer serve(Path socket, String permissions, BindableService service) throws IOException {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        Server server = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .channelType(EpollServerDomainSocketChannel.class)
                .bossEventLoopGroup(group)
                .workerEventLoopGroup(group)
                .addService(service)
                .build()
                .start();
        Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString(permissions));
        return new FakeDriverServer(group, server, socket);
    }

    /** The remote driver's configuration that reaches this server. */
    DriverSettings config() {
        return DriverSettings.EMPTY.with(RemoteSettings.TARGET, "unix://" + socket);
    }

    @Override
    public void close() {
        server.shutdownNow();
        var unused = group.shutdownGracefully();
    }
}
