package dev.sandgate.driver.vm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.abort;

import dev.sandgate.conformance.LaunchPolicies;
import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.StaticPolicy;
import dev.sandgate.testing.ProcessTest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@ProcessTest
class ConfigDiskTest {
    private static final Path BUSYBOX = Path.of("/bin/busybox");
    private static final SandboxRef REF = new SandboxRef("0b7e5f3c-2d8a-4c1e-9f00-1a2b3c4d5e6f", "team", "agent");
    private static final SandboxSpec SPEC = new SandboxSpec(
            "default",
            List.of("sh", "-c"),
            List.of("echo \"it's\" \"$GREETING\""),
            Map.of("GREETING", "hello 'world'\nsecond line", "EMPTY", ""),
            Map.of(),
            ResourceRequests.NONE);
    private static final LaunchInput LAUNCH =
            new LaunchInput(3, LaunchPolicies.of(2, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY));

    @TempDir
    Path directory;

    @Test
    void busyboxTarExtractsEveryFileByteForByte() throws Exception {
        requireBusybox();
        Path disk = directory.resolve("config.img");
        ConfigDisk.write(disk, REF, SPEC, LAUNCH);
        Path extracted = Files.createDirectory(directory.resolve("extracted"));

        run(BUSYBOX.toString(), "tar", "-x", "-f", disk.toString(), "-C", extracted.toString());

        for (var file : ConfigDisk.files(REF, SPEC, LAUNCH).entrySet()) {
            assertThat(extracted.resolve(file.getKey())).hasBinaryContent(file.getValue());
        }
        assertThat(extracted.resolve("policy.json"))
                .hasBinaryContent(LAUNCH.policy().canonicalDocument());
    }

    @Test
    void theShellReadsBackEnvironmentAndCommandExactly() throws Exception {
        requireBusybox();
        Map<String, byte[]> files = ConfigDisk.files(REF, SPEC, LAUNCH);
        Path environment = Files.write(directory.resolve("environment.sh"), files.get("environment.sh"));
        Path command = Files.write(directory.resolve("command.sh"), files.get("command.sh"));
        Path launch = Files.write(directory.resolve("launch.env"), files.get("launch.env"));

        String output = run(
                BUSYBOX.toString(),
                "sh",
                "-c",
                ". " + launch + "; echo \"$SANDGATE_GENERATION $SANDGATE_POLICY_DIGEST $SANDGATE_NETWORK\"; . "
                        + environment + "; printf '[%s]' \"$EMPTY\"; . " + command);

        assertThat(output).isEqualTo("3 " + LAUNCH.policy().digest() + " none\n[]it's hello 'world'\nsecond line\n");
    }

    @Test
    void aSpecWithoutCommandGetsAnEmptyCommandFile() {
        Map<String, byte[]> files = ConfigDisk.files(REF, SandboxSpec.ofImage("default"), LAUNCH);

        assertThat(files.get("command.sh")).isEmpty();
        assertThat(files.get("environment.sh")).isEmpty();
    }

    @Test
    void networkDefaultIsHandedToTheGuestAsUserNetworking() {
        var policy = new StaticPolicy(false, NetworkMode.DEFAULT, Set.of(), false, 0, 0, 0);
        var launch = new LaunchInput(1, LaunchPolicies.of(1, policy, DynamicPolicy.EMPTY));

        String env = new String(ConfigDisk.files(REF, SPEC, launch).get("launch.env"), StandardCharsets.UTF_8);

        assertThat(env).contains("SANDGATE_NETWORK=user\n");
    }

    @Test
    void theDiskIsReadableByItsOwnerOnly() throws IOException {
        Path disk = directory.resolve("config.img");

        ConfigDisk.write(disk, REF, SPEC, LAUNCH);

        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(disk)))
                .isEqualTo("rw-------");
    }

    @Test
    void aNulCharacterInTheEnvironmentIsRefused() {
        var spec = new SandboxSpec(
                "default", List.of(), List.of(), Map.of("BAD", "a\0b"), Map.of(), ResourceRequests.NONE);

        assertThatThrownBy(() -> ConfigDisk.validate(spec))
                .isInstanceOfSatisfying(
                        DriverException.class, e -> assertThat(e.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT))
                .hasMessageStartingWith("spec.environment[BAD]");
    }

    /** Skips without busybox, or fails under CI ({@code sandgate.requireEngines=true}), which must install it. */
    private static void requireBusybox() {
        if (!Files.isExecutable(BUSYBOX)) {
            String message = "busybox is not installed (apt-get install busybox-static)";
            if (Boolean.getBoolean("sandgate.requireEngines")) {
                fail(message);
            }
            abort(message);
        }
    }

    private static String run(String... command) throws Exception {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor())
                .as("exit status of %s: %s", List.of(command), output)
                .isZero();
        return output;
    }
}
