package dev.sandgate.gateway.testing;

import dev.sandgate.api.v1.CreateSandboxRequest;
import dev.sandgate.api.v1.PolicyInput;
import dev.sandgate.api.v1.PolicyMode;
import dev.sandgate.api.v1.Sandbox;
import dev.sandgate.api.v1.SandboxServiceGrpc;
import dev.sandgate.api.v1.SandboxSpec;
import dev.sandgate.api.v1.SandboxTarget;
import dev.sandgate.gateway.server.Gateway;
import dev.sandgate.gateway.server.GatewayServer;
import dev.sandgate.gateway.server.GatewaySettings;
import dev.sandgate.spi.DriverCapabilities;
import dev.sandgate.testing.StoreSchema;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * A gateway for tests: the real {@link Gateway} and {@link GatewayServer} on a temporary data directory, with a
 * {@link FakeDriver} over a temporary backend directory, reached in-process or over real Netty on loopback.
 * {@link #restart()} closes everything and opens it again on the same directories, with a fresh driver instance.
 *
 * <p>When the run is on PostgreSQL ({@link StoreSchema#onPostgres()}), the store is a schema of this gateway's own
 * instead of the data directory's SQLite file (unless the test gives its own store-url): kept across restarts, dropped
 * at close.
 */
public final class TestGateway implements AutoCloseable {
    /** How tests reach the gateway. */
    public enum Transport {
        IN_PROCESS,
        NETTY
    }

    private final Path dataDir;
    private final Path backendDir;
    private final Transport transport;
    private final DriverCapabilities capabilities;
    private final List<String> extraArgs;
    private final boolean referenceDriver;
    private final StoreSchema schema;
    private FakeDriver driver;
    private Gateway gateway;
    private GatewayServer server;
    private ManagedChannel channel;

    private TestGateway(
            Path root,
            Transport transport,
            DriverCapabilities capabilities,
            List<String> extraArgs,
            boolean referenceDriver) {
        this.dataDir = root.resolve("data");
        this.backendDir = root.resolve("backend");
        this.transport = transport;
        this.capabilities = capabilities;
        this.extraArgs = List.copyOf(extraArgs);
        this.referenceDriver = referenceDriver;
        this.schema = StoreSchema.onPostgres() && !this.extraArgs.contains("--store-url")
                ? StoreSchema.createUnchecked()
                : null;
        try {
            open();
        } catch (RuntimeException | Error e) {
            dropSchema();
            throw e;
        }
    }

    public static TestGateway start(Path root, Transport transport) {
        return new TestGateway(root, transport, FakeDriver.allCapabilities(), List.of(), false);
    }

    public static TestGateway start(
            Path root, Transport transport, DriverCapabilities capabilities, String... extraArgs) {
        return new TestGateway(root, transport, capabilities, List.of(extraArgs), false);
    }

    /** A gateway on the reference driver (selected through ServiceLoader, as in production) over a directory. */
    public static TestGateway startOnReferenceDriver(Path root, Transport transport) {
        return new TestGateway(root, transport, FakeDriver.allCapabilities(), List.of(), true);
    }

    private void open() {
        List<String> args = new ArrayList<>(List.of("--data-dir", dataDir.toString(), "--listen", "127.0.0.1:0"));
        args.addAll(extraArgs);
        if (schema != null) {
            args.addAll(schema.storeArgs());
        }
        if (referenceDriver) {
            args.addAll(List.of("--driver", "reference", "--driver-property", "reference.directory=" + backendDir));
            gateway = Gateway.open(GatewaySettings.load(args.toArray(String[]::new), Map.of()));
        } else {
            GatewaySettings config = GatewaySettings.load(args.toArray(String[]::new), Map.of());
            gateway = Gateway.open(config, Clock.systemUTC(), (gatewayId, clock) -> {
                driver = new FakeDriver(backendDir, gatewayId, capabilities);
                return new Gateway.NamedDriver(FakeDriverProvider.NAME, driver);
            });
        }
        switch (transport) {
            case IN_PROCESS -> {
                String name = "sandgate-test-" + UUID.randomUUID();
                server = GatewayServer.start(gateway, InProcessServerBuilder.forName(name));
                channel = InProcessChannelBuilder.forName(name).build();
            }
            case NETTY -> {
                server = GatewayServer.start(
                        gateway,
                        NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)));
                channel = NettyChannelBuilder.forAddress("127.0.0.1", server.port())
                        .usePlaintext()
                        .build();
            }
        }
    }

    public SandboxServiceGrpc.SandboxServiceBlockingStub stub() {
        return SandboxServiceGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
    }

    public SandboxServiceGrpc.SandboxServiceStub asyncStub() {
        return SandboxServiceGrpc.newStub(channel);
    }

    public ManagedChannel channel() {
        return channel;
    }

    /** The fake driver (not available on the reference driver). */
    public FakeDriver driver() {
        if (referenceDriver) {
            throw new IllegalStateException("this gateway runs the reference driver");
        }
        return driver;
    }

    public Gateway gateway() {
        return gateway;
    }

    public GatewayServer server() {
        return server;
    }

    public Path backendDir() {
        return backendDir;
    }

    /** Closes the server, the gateway and the driver, and opens them again on the same directories. */
    public void restart() {
        closeAll();
        open();
    }

    /** The PostgreSQL schema of this gateway's store, if the run is on PostgreSQL. */
    public Optional<StoreSchema> schema() {
        return Optional.ofNullable(schema);
    }

    @Override
    public void close() {
        try {
            closeAll();
        } finally {
            dropSchema();
        }
    }

    private void dropSchema() {
        if (schema != null) {
            schema.close();
        }
    }

    private void closeAll() {
        channel.shutdownNow();
        try {
            channel.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        server.close();
        gateway.close();
    }

    // Request helpers shared by the tests.

    public static SandboxSpec busybox() {
        return SandboxSpec.newBuilder()
                .setImage("localhost/busybox:latest")
                .addCommand("sleep")
                .addArgs("3600")
                .build();
    }

    public static CreateSandboxRequest.Builder createRequest(String workspace, String name) {
        return CreateSandboxRequest.newBuilder()
                .setWorkspace(workspace)
                .setName(name)
                .setSpec(busybox());
    }

    public static CreateSandboxRequest.Builder createRequest(
            String workspace, String name, String policyJson, PolicyMode mode) {
        return createRequest(workspace, name)
                .setPolicy(PolicyInput.newBuilder().setDocument(policyJson).setMode(mode));
    }

    public Sandbox create(String workspace, String name) {
        return stub().createSandbox(createRequest(workspace, name).build()).getSandbox();
    }

    public static SandboxTarget byId(String id) {
        return SandboxTarget.newBuilder().setId(id).build();
    }

    public static SandboxTarget byName(String workspace, String name) {
        return SandboxTarget.newBuilder().setWorkspace(workspace).setName(name).build();
    }

    public static String newRequestId() {
        return UUID.randomUUID().toString();
    }
}
