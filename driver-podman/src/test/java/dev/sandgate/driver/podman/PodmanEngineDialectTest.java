package dev.sandgate.driver.podman;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.dockerjava.api.model.HostConfig;
import dev.sandgate.driver.container.ContainerEventKind;
import dev.sandgate.spi.DriverSettings;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PodmanEngineDialectTest {
    private final PodmanEngineDialect dialect = new PodmanEngineDialect(PodmanUlimits.from(DriverSettings.EMPTY));

    @ParameterizedTest
    @CsvSource({
        "remove, REMOVED",
        "destroy, REMOVED",
        "died, EXITED",
        "die, EXITED",
        "oom, OUT_OF_MEMORY",
        "init, STATE_CHANGED",
        "cleanup, STATE_CHANGED",
        "start, STATE_CHANGED",
        "stop, STATE_CHANGED",
        "exec, IGNORED",
        "exec_died, IGNORED",
        "attach, IGNORED"
    })
    void podmansEventActionsAreClassified(String action, ContainerEventKind kind) {
        assertThat(dialect.classify(action, Map.of())).isEqualTo(kind);
    }

    @Test
    void everyContainerGetsTheConfiguredUlimits() {
        HostConfig hostConfig = HostConfig.newHostConfig();

        dialect.customizeHostConfig(hostConfig);

        assertThat(hostConfig.getUlimits()).extracting(limit -> limit.getName()).containsExactly("nofile", "nproc");
    }
}
