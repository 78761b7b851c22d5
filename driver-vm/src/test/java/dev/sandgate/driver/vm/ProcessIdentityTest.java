package dev.sandgate.driver.vm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.testing.ProcessTest;
import java.time.Duration;
import org.junit.jupiter.api.Test;

@ProcessTest
class ProcessIdentityTest {
    @Test
    void theRunningJvmIsAlive() {
        ProcessIdentity self = ProcessIdentity.of(ProcessHandle.current().pid()).orElseThrow();

        assertThat(self.alive()).isTrue();
    }

    @Test
    void theSamePidWithAnotherStartTimeIsAnotherProcess() {
        ProcessIdentity self = ProcessIdentity.of(ProcessHandle.current().pid()).orElseThrow();

        assertThat(new ProcessIdentity(self.pid(), self.startTicks() + 1).alive())
                .isFalse();
    }

    @Test
    void killEndsThatProcessAndAnExitedProcessIsNotAlive() throws Exception {
        Process sleeper = new ProcessBuilder("sleep", "60").start();
        ProcessIdentity identity = ProcessIdentity.of(sleeper.pid()).orElseThrow();

        identity.kill();

        assertThat(Qemu.awaitExit(identity, Duration.ofSeconds(10))).isTrue();
        assertThat(identity.alive()).isFalse();
        assertThat(sleeper.waitFor()).as("killed by SIGKILL").isEqualTo(128 + 9);
    }

    @Test
    void killOfAnIdentityWithAnotherStartTimeLeavesTheProcessAlone() throws Exception {
        Process sleeper = new ProcessBuilder("sleep", "60").start();
        ProcessIdentity real = ProcessIdentity.of(sleeper.pid()).orElseThrow();

        new ProcessIdentity(real.pid(), real.startTicks() + 1).kill();
        sleeper.destroy();

        assertThat(sleeper.waitFor())
                .as("ended by the SIGTERM that followed, not by a SIGKILL")
                .isEqualTo(128 + 15);
    }
}
