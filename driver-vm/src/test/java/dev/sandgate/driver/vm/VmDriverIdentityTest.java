package dev.sandgate.driver.vm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.spi.StaticPolicy;
import dev.sandgate.testing.ProcessTest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The driver acts on a VM only through the process identity its record holds, and reads state directories it did
 * not write defensively. No VM boots here: the records point at ordinary processes.
 */
@ProcessTest
class VmDriverIdentityTest {
    private static final String GATEWAY = "identity-test";
    private static final String DIGEST = LaunchPolicy.digestOf("{}".getBytes(StandardCharsets.UTF_8));

    @TempDir
    Path root;

    private StateStore store;
    private VmDriver driver;
    private Process sleeper;

    @BeforeEach
    void createDriver() throws IOException {
        store = new StateStore(root);
        VmSettings settings = VmSettings.from(
                DriverSettings.EMPTY.with("vm.kernel", "/unused/kernel").with("vm.initramfs", "/unused/initramfs"));
        driver = new VmDriver(settings, store, DriverContext.of(GATEWAY));
        sleeper = new ProcessBuilder("sleep", "300").start();
    }

    @AfterEach
    void endSleeper() throws InterruptedException {
        driver.close();
        sleeper.destroyForcibly().waitFor();
    }

    @Test
    void aRecordedPidNowUsedByAnotherProcessIsNotRunningAndStopSignalsNothing() throws Exception {
        SandboxRef ref = plantRecord(reused());

        SandboxObservation observed = driver.get(ref);
        boolean stoppedNow = driver.stop(ref, OptionalLong.empty()).stoppedNow();
        sleeper.destroy();

        assertThat(observed.state()).isEqualTo(SandboxState.FAILED);
        assertThat(stoppedNow).isFalse();
        assertThat(sleeper.waitFor())
                .as("ended by our SIGTERM, never signalled by the driver")
                .isEqualTo(128 + 15);
    }

    @Test
    void deleteOfARecordWhosePidWasReusedRemovesTheDirectoryAndSignalsNothing() throws Exception {
        SandboxRef ref = plantRecord(reused());

        boolean deleted = driver.delete(ref, OptionalLong.empty()).deleted();
        sleeper.destroy();

        assertThat(deleted).isTrue();
        assertThat(store.sandboxDirectory(GATEWAY, ref.id())).doesNotExist();
        assertThat(sleeper.waitFor())
                .as("ended by our SIGTERM, never signalled by the driver")
                .isEqualTo(128 + 15);
    }

    @Test
    void anUnreadableRecordIsLeftOutOfListAndGetReportsItAsInternal() throws IOException {
        SandboxRef ref = new SandboxRef(Identifiers.newSandboxId(), "team", "broken");
        Path directory = Files.createDirectories(store.sandboxDirectory(GATEWAY, ref.id()));
        Files.writeString(directory.resolve(StateStore.RECORD), "format=1\nphase=RUNNING\n");

        assertThat(driver.list()).isEmpty();
        assertThatThrownBy(() -> driver.get(ref))
                .isInstanceOfSatisfying(
                        DriverException.class, e -> assertThat(e.code()).isEqualTo(DriverErrorCode.INTERNAL));
    }

    @Test
    void aDirectoryWhoseRecordCarriesAnotherIdIsNoSandboxOfThatId() {
        SandboxRef owner = new SandboxRef(Identifiers.newSandboxId(), "team", "owner");
        SandboxRef other = new SandboxRef(Identifiers.newSandboxId(), "team", "owner");
        Path directory = store.sandboxDirectory(GATEWAY, other.id());
        writeRecord(directory, owner, Optional.empty());

        assertThatThrownBy(() -> driver.get(other))
                .isInstanceOfSatisfying(
                        DriverException.class,
                        e -> assertThat(e.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION));
        assertThat(driver.list()).isEmpty();
    }

    @Test
    void aCreateOfANewIdWhoseNameAnotherIdsRecordHoldsIsRefusedBeforeAnythingIsWritten() {
        SandboxRef holder = new SandboxRef(Identifiers.newSandboxId(), "team", "held");
        writeRecord(store.sandboxDirectory(GATEWAY, holder.id()), holder, Optional.empty());
        SandboxRef newcomer = new SandboxRef(Identifiers.newSandboxId(), "team", "held");
        byte[] document = "{}".getBytes(StandardCharsets.UTF_8);
        var launch =
                new LaunchInput(1, new LaunchPolicy(1, DIGEST, document, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY));

        assertThatThrownBy(() -> driver.create(newcomer, SandboxSpec.ofImage("default"), launch))
                .isInstanceOfSatisfying(DriverException.class, e -> {
                    assertThat(e.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
                    assertThat(e.mismatches())
                            .containsExactly(new Mismatch(Mismatch.SANDBOX_ID, newcomer.id(), holder.id()));
                });
        assertThat(store.sandboxDirectory(GATEWAY, newcomer.id())).doesNotExist();
    }

    /** The sleeper's pid with another start time: what a record holds after its QEMU exited and the pid was reused. */
    private ProcessIdentity reused() {
        ProcessIdentity real = ProcessIdentity.of(sleeper.pid()).orElseThrow();
        return new ProcessIdentity(real.pid(), real.startTicks() + 1);
    }

    private SandboxRef plantRecord(ProcessIdentity process) {
        SandboxRef ref = new SandboxRef(Identifiers.newSandboxId(), "team", "agent");
        writeRecord(store.sandboxDirectory(GATEWAY, ref.id()), ref, Optional.of(process));
        return ref;
    }

    private void writeRecord(Path directory, SandboxRef ref, Optional<ProcessIdentity> process) {
        try {
            Files.createDirectories(directory);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        store.write(
                directory,
                new VmRecord(
                        UUID.randomUUID().toString(),
                        VmRecord.stamps(Map.of(), GATEWAY, ref, 1, DIGEST),
                        SandboxSpec.ofImage("default"),
                        1,
                        VmRecord.Phase.RUNNING,
                        process));
    }
}
