package dev.sandgate.driver.vm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.conformance.LaunchPolicies;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.StaticPolicy;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Launch policies the driver refuses before it touches anything. No VM boots here. */
class VmDriverPolicyTest {
    private static final String GATEWAY = "policy-test";
    private static final SandboxSpec SPEC = SandboxSpec.ofImage(VmSettings.DEFAULT_IMAGE);

    @TempDir
    Path root;

    private StateStore store;
    private VmDriver driver;

    @BeforeEach
    void createDriver() {
        store = new StateStore(root);
        VmSettings settings = VmSettings.from(DriverSettings.EMPTY
                .with(VmSettings.STATE_DIRECTORY, root.toString())
                .with("vm.kernel", "/unused/kernel")
                .with("vm.initramfs", "/unused/initramfs"));
        driver = new VmDriver(settings, store, DriverContext.of(GATEWAY));
    }

    @AfterEach
    void closeDriver() {
        driver.close();
    }

    @Test
    void aCpuLimitThatIsNotAWholeNumberOfCoresIsRefusedBeforeAnythingIsCreatedOrStarted() throws IOException {
        SandboxRef stopped = plantStoppedSandbox();
        Path record = store.sandboxDirectory(GATEWAY, stopped.id()).resolve(StateStore.RECORD);
        byte[] recordBefore = Files.readAllBytes(record);

        for (long millis : new long[] {1, 500, 999, 1500, 2001}) {
            SandboxRef created = new SandboxRef(Identifiers.newSandboxId(), "team", "cpu-" + millis);

            assertRefusedNamingTheCpuLimit(() -> driver.validate(SPEC, launch(1, millis)), millis);
            assertRefusedNamingTheCpuLimit(() -> driver.create(created, SPEC, launch(1, millis)), millis);
            assertRefusedNamingTheCpuLimit(() -> driver.start(stopped, launch(2, millis)), millis);

            assertThat(store.sandboxDirectory(GATEWAY, created.id()))
                    .as("a refused create leaves no state directory")
                    .doesNotExist();
            assertThat(Files.readAllBytes(record))
                    .as("a refused start leaves the record as it was")
                    .isEqualTo(recordBefore);
        }
        try (var children = Files.list(store.gatewayDirectory(GATEWAY))) {
            assertThat(children.map(path -> path.getFileName().toString()))
                    .as("nothing but the planted sandbox (and the lock file) under the gateway's directory")
                    .allMatch(name -> name.equals(stopped.id()) || name.equals(".locks"));
        }
    }

    @Test
    void aCpuLimitInWholeCoresIsAcceptedAboveTheMaximumToo() {
        // 128 cores gives the guest 64 vCPUs: fewer than asked, which is stricter (QemuArgumentsTest).
        for (long millis : new long[] {0, 1000, 2000, 64_000, 128_000}) {
            assertThatCode(() -> driver.validate(SPEC, launch(1, millis)))
                    .as("%d millicores", millis)
                    .doesNotThrowAnyException();
        }
    }

    private static void assertRefusedNamingTheCpuLimit(ThrowingCallable call, long millis) {
        assertThatThrownBy(call).as("%d millicores", millis).isInstanceOfSatisfying(DriverException.class, e -> {
            assertThat(e.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
            assertThat(e.getMessage())
                    .startsWith("policy.static.cpu_limit_millis: the vm driver gives whole vCPUs")
                    .contains(Long.toString(millis), "use a multiple of 1000");
        });
    }

    private static LaunchInput launch(long generation, long cpuLimitMillis) {
        var policy = new StaticPolicy(false, NetworkMode.NONE, Set.of(), false, 0, cpuLimitMillis, 0);
        return new LaunchInput(generation, LaunchPolicies.of(1, policy, DynamicPolicy.EMPTY));
    }

    /** A stopped sandbox at generation 1, as the driver would have left it. */
    private SandboxRef plantStoppedSandbox() throws IOException {
        SandboxRef ref = new SandboxRef(Identifiers.newSandboxId(), "team", "stopped");
        Path directory = Files.createDirectories(store.sandboxDirectory(GATEWAY, ref.id()));
        String digest =
                LaunchPolicies.of(1, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY).digest();
        store.write(
                directory,
                new VmRecord(
                        UUID.randomUUID().toString(),
                        VmRecord.stamps(Map.of(), GATEWAY, ref, 1, digest),
                        SPEC,
                        1,
                        VmRecord.Phase.STOPPED,
                        Optional.empty()));
        assertThat(Files.readString(directory.resolve(StateStore.RECORD), StandardCharsets.UTF_8))
                .contains("phase=STOPPED");
        return ref;
    }
}
