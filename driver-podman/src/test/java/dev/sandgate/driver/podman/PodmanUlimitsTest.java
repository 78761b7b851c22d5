package dev.sandgate.driver.podman;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.github.dockerjava.api.model.Ulimit;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class PodmanUlimitsTest {
    @Test
    void theDefaultSetsBothNofileAndNprocWithinWhatRootMaySet() {
        PodmanUlimits ulimits = PodmanUlimits.from(DriverSettings.EMPTY);

        assertThat(ulimits.toUlimits())
                .extracting(Ulimit::getName, Ulimit::getSoftLong, Ulimit::getHardLong)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("nofile", 16384L, 16384L),
                        org.assertj.core.groups.Tuple.tuple("nproc", 32768L, 32768L));
    }

    @Test
    void otherLimitsMayBeAddedNextToTheRequiredOnes() {
        PodmanUlimits ulimits = PodmanUlimits.from(
                DriverSettings.EMPTY.with(PodmanUlimits.KEY, "nofile=1024:2048, nproc=512:512, core=0:0"));

        assertThat(ulimits.limits()).containsOnlyKeys("nofile", "nproc", "core");
        assertThat(ulimits.limits().get("nofile")).isEqualTo(new PodmanUlimits.Range(1024, 2048));
    }

    @ParameterizedTest
    @ValueSource(strings = {"nofile=1024:1024", "nproc=512:512", "core=0:0"})
    void aListWithoutBothNofileAndNprocIsRefusedBecauseItReplacesPodmansDefaults(String value) {
        DriverException refused = catchThrowableOfType(
                DriverException.class, () -> PodmanUlimits.from(DriverSettings.EMPTY.with(PodmanUlimits.KEY, value)));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(refused.getMessage()).startsWith(PodmanUlimits.KEY + ":").contains("both nofile and nproc");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "nofile=1024,nproc=512:512",
                "nofile=2048:1024,nproc=512:512",
                "nofile=1:1,nofile=2:2,nproc=1:1",
                "NOFILE=1:1,nproc=1:1"
            })
    void malformedEntriesAreRefusedNamingTheKey(String value) {
        DriverException refused = catchThrowableOfType(
                DriverException.class, () -> PodmanUlimits.from(DriverSettings.EMPTY.with(PodmanUlimits.KEY, value)));

        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        assertThat(refused.getMessage()).startsWith(PodmanUlimits.KEY + ":");
    }
}
