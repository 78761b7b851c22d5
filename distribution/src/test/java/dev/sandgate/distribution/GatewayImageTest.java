package dev.sandgate.distribution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.ExposedPort;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.PortBinding;
import com.github.dockerjava.api.model.Ports;
import dev.sandgate.testing.EngineTest;
import dev.sandgate.testing.ProcessTest;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.Container.ExecResult;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/**
 * The gateway image (deploy/kubernetes/Containerfile, built by scripts/images/gateway-image.sh) run the way the
 * Deployment runs it: read-only root filesystem, a writable /tmp, its data volume, no capabilities, the gRPC port
 * published on 127.0.0.1 only. The build runs this class once per engine (DOCKER_HOST: Docker's socket, then Podman's),
 * with the image in {@code sandgate.gatewayImage}. Off loopback without TLS and an authenticator the image starts only
 * with {@code SANDGATE_INSECURE=true}, which the lifecycle tests set; the last test checks the refusal without it.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@ProcessTest
@EngineTest
class GatewayImageTest {
    private static final int GRPC_PORT = 7443;

    @TempDir
    static Path scratch;

    private static GenericContainer<?> gateway;
    private static String target;

    @BeforeAll
    @SuppressWarnings("resource") // closed in stopContainer
    static void startTheImage() {
        String image = System.getProperty("sandgate.gatewayImage");
        assertThat(image).as("sandgate.gatewayImage (the image to test)").isNotBlank();
        String engine = System.getProperty("sandgate.imageTest.engine", "");
        boolean podman = DockerClientFactory.instance().client().versionCmd().exec().getComponents().stream()
                .anyMatch(component -> component.getName().contains("Podman"));
        assertThat(podman ? "podman" : "docker").as("the engine at DOCKER_HOST").isEqualTo(engine);
        gateway = new GenericContainer<>(DockerImageName.parse(image))
                .withEnv("SANDGATE_DRIVER", "reference")
                .withEnv("SANDGATE_DRIVER_PROPERTY_REFERENCE_DIRECTORY", "/var/lib/sandgate/reference")
                // The image listens on 0.0.0.0 inside its network namespace; without TLS and an authenticator it
                // starts only with --insecure (the next-to-last test shows the refusal). The port is published on
                // 127.0.0.1 only.
                .withEnv("SANDGATE_INSECURE", "true")
                .withExposedPorts(GRPC_PORT)
                // exec: sqlite-jdbc and Netty load their native libraries from /tmp
                .withTmpFs(Map.of("/tmp", "rw,exec,nosuid,size=256m"))
                .withCreateContainerCmdModifier(create -> create.getHostConfig()
                        .withReadonlyRootfs(true)
                        .withCapDrop(Capability.ALL)
                        .withSecurityOpts(java.util.List.of("no-new-privileges"))
                        .withPortBindings(
                                new PortBinding(Ports.Binding.bindIp("127.0.0.1"), ExposedPort.tcp(GRPC_PORT))))
                .waitingFor(Wait.forLogMessage(".*serving sandgate\\.v1\\.SandboxService on .*\\n", 1)
                        .withStartupTimeout(Duration.ofMinutes(2)));
        gateway.start();
        target = "127.0.0.1:" + gateway.getMappedPort(GRPC_PORT);
    }

    @AfterAll
    static void removeContainer() {
        if (gateway != null) {
            gateway.stop();
        }
    }

    @Test
    @Order(1)
    void itPublishesItsPortOnLoopbackOnlyAndAnswersHealthChecks() {
        InspectContainerResponse info = gateway.getContainerInfo();
        Ports.Binding[] bindings =
                info.getNetworkSettings().getPorts().getBindings().get(ExposedPort.tcp(GRPC_PORT));
        assertThat(bindings)
                .isNotEmpty()
                .allSatisfy(b -> assertThat(b.getHostIp()).isEqualTo("127.0.0.1"));
        assertThat(gateway.getLogs()).as("the warning of every insecure start").contains("INSECURE");

        ManagedChannel channel =
                NettyChannelBuilder.forTarget(target).usePlaintext().build();
        try {
            HealthGrpc.HealthBlockingStub health = HealthGrpc.newBlockingStub(channel);
            await().atMost(Duration.ofMinutes(1))
                    .untilAsserted(() -> assertThat(health.withDeadlineAfter(5, TimeUnit.SECONDS)
                                    .check(HealthCheckRequest.newBuilder()
                                            .setService("sandgate.v1.SandboxService")
                                            .build())
                                    .getStatus())
                            .isEqualTo(ServingStatus.SERVING));
        } finally {
            channel.shutdownNow();
        }
    }

    @Test
    @Order(2)
    void theCliDrivesASandboxThroughItsLifecycleInTheContainer() {
        assertThat(cli("create", "-w", "image", "-n", "one", "--image", "busybox", "--", "sleep", "3600"))
                .contains("created");
        assertThat(cli("stop", "-w", "image", "-n", "one")).contains("STOPPED_NOW");
        assertThat(cli("start", "-w", "image", "-n", "one")).contains("LAUNCHED");
        assertThat(cli("delete", "-w", "image", "-n", "one")).contains("DELETED_NOW");
    }

    @Test
    @Order(3)
    void itRunsAsANonRootUserOnAReadOnlyRootWithItsStateInTheVolume() throws Exception {
        ExecResult status = gateway.execInContainer("cat", "/proc/1/status");
        assertThat(status.getStdout()).containsPattern("(?m)^Uid:\\s+10001\\s");
        assertThat(status.getStdout()).doesNotContainPattern("(?m)^Uid:\\s+0\\s");
        assertThat(gateway.getContainerInfo().getHostConfig().getReadonlyRootfs())
                .isTrue();

        ExecResult write = gateway.execInContainer("sh", "-c", "touch /opt/sandgate/written");
        assertThat(write.getExitCode()).as("a write to the root filesystem").isNotZero();

        ExecResult data = gateway.execInContainer("ls", "/var/lib/sandgate");
        assertThat(data.getStdout()).contains("sandgate.db", "token-keys.properties", "reference");
    }

    @Test
    @Order(4)
    void aStopEndsItCleanlyWithTheStatusOfSigterm() {
        var docker = DockerClientFactory.instance().client();
        String id = gateway.getContainerId();
        docker.stopContainerCmd(id).withTimeout(30).exec();

        InspectContainerResponse.ContainerState state =
                docker.inspectContainerCmd(id).exec().getState();
        assertThat(state.getExitCodeLong()).isEqualTo(143L);
        assertThat(gateway.getLogs()).contains("stopped in").doesNotContain("ERROR");
    }

    @Test
    @Order(5)
    void withoutTlsAndAuthenticationAndWithoutInsecureItRefusesToStart() throws Exception {
        DockerClient docker = DockerClientFactory.instance().client();
        String id = docker.createContainerCmd(System.getProperty("sandgate.gatewayImage"))
                .withEnv(
                        "SANDGATE_DRIVER=reference",
                        "SANDGATE_DRIVER_PROPERTY_REFERENCE_DIRECTORY=/var/lib/sandgate/reference")
                .withHostConfig(HostConfig.newHostConfig()
                        .withReadonlyRootfs(true)
                        .withCapDrop(Capability.ALL)
                        .withTmpFs(Map.of("/tmp", "rw,exec,nosuid,size=256m")))
                .exec()
                .getId();
        try {
            docker.startContainerCmd(id).exec();
            Integer status = docker.waitContainerCmd(id).start().awaitStatusCode(2, TimeUnit.MINUTES);
            StringBuilder output = new StringBuilder();
            docker.logContainerCmd(id)
                    .withStdOut(true)
                    .withStdErr(true)
                    .exec(new ResultCallback.Adapter<Frame>() {
                        @Override
                        public void onNext(Frame frame) {
                            output.append(new String(frame.getPayload(), StandardCharsets.UTF_8));
                        }
                    })
                    .awaitCompletion(1, TimeUnit.MINUTES);
            assertThat(status).as("exit status; output: %s", output).isEqualTo(2);
            assertThat(output).contains("--insecure");
        } finally {
            docker.removeContainerCmd(id)
                    .withForce(true)
                    .withRemoveVolumes(true)
                    .exec();
        }
    }

    private static String cli(String... args) {
        String[] command = new String[args.length + 2];
        command[0] = "--target";
        command[1] = target;
        System.arraycopy(args, 0, command, 2, args.length);
        Distribution.Result result = Distribution.run(scratch, "sandgate", command);
        assertThat(result.status())
                .as("sandgate %s: %s", String.join(" ", args), result.err())
                .isZero();
        return result.out();
    }
}
