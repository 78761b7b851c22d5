package dev.sandgate.driver.podman;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.dockerjava.api.model.Ulimit;
import dev.sandgate.driver.container.ContainerEngineProvider;
import dev.sandgate.driver.container.testing.ContainerEngineDriverTest;
import dev.sandgate.driver.container.testing.TestEngine;
import dev.sandgate.spi.Availability;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StaticPolicy;
import dev.sandgate.testing.EngineTest;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The container driver's engine tests against real Podman, plus what only Podman needs. */
@EngineTest
class PodmanDriverTest extends ContainerEngineDriverTest {
    @Override
    protected TestEngine engine() {
        return PodmanTestEngine.ENGINE;
    }

    @Override
    protected ContainerEngineProvider provider() {
        return new PodmanDriverProvider();
    }

    @Override
    protected String inspectedDefaultNetworkMode() {
        return "bridge";
    }

    /** Limits unlike both Podman's defaults and the test machine's containers.conf, to prove where they come from. */
    @Override
    protected DriverSettings config() {
        return super.config().with(PodmanUlimits.KEY, "nofile=4096:4096,nproc=2048:3072");
    }

    @Test
    void containersGetTheConfiguredNofileAndNprocLimits() {
        SandboxRef ref = createRunning(spec(TestEngine.SLEEP_FOREVER), StaticPolicy.DEFAULT);
        String containerId = probe.runningContainer(ref);

        Map<String, String> limits = Stream.of(
                        inspect(containerId).getHostConfig().getUlimits())
                .collect(Collectors.toMap(
                        limit -> limit.getName().toLowerCase(Locale.ROOT).replace("rlimit_", ""),
                        PodmanDriverTest::range));

        assertThat(limits).containsEntry("nofile", "4096:4096").containsEntry("nproc", "2048:3072");
        String inside = probe.exec(
                        containerId, "sh", "-c", "echo $(ulimit -Sn):$(ulimit -Hn) $(ulimit -Su):$(ulimit -Hu)")
                .stdout()
                .strip();
        assertThat(inside).isEqualTo("4096:4096 2048:3072");
    }

    @Test
    void aDockerEngineSocketIsNotTakenForPodman() {
        TestEngine docker =
                TestEngine.fromEnvironment("Docker Engine", "SANDGATE_DOCKER_HOST", "unix:///var/run/docker.sock");
        docker.requireAvailable();

        Availability availability = provider().availability(DriverSettings.EMPTY.with("podman.host", docker.host()));

        assertThat(availability.available()).isFalse();
        assertThat(availability.reason()).contains(docker.host()).contains("use the docker driver");
    }

    private static String range(Ulimit limit) {
        return limit.getSoftLong() + ":" + limit.getHardLong();
    }
}
