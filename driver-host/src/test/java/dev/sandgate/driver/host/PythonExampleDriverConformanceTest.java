package dev.sandgate.driver.host;

import dev.sandgate.conformance.BackendProbe;
import dev.sandgate.conformance.ComputeDriverConformanceTest;
import dev.sandgate.driver.remote.RemoteDriverProvider;
import dev.sandgate.spi.ComputeDriverProvider;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.testing.ProcessTest;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kit over the wire against a driver written in Python ({@code driver-python-example}), with its probe served by
 * the same process (the {@code DriverProbe} service). Needs Debian's python3-grpcio, python3-protobuf and
 * python3-grpc-tools (scripts/engines/python.sh installs them); the stubs are generated here, into the test's
 * temporary directory.
 */
@ProcessTest
class PythonExampleDriverConformanceTest extends ComputeDriverConformanceTest {
    static final String PYTHON = "/usr/bin/python3";
    static final Path DRIVER_DIRECTORY =
            Path.of("..", "driver-python-example").toAbsolutePath().normalize();

    @TempDir
    static Path directory;

    @RegisterExtension
    static final HostedDriverExtension HOST = new HostedDriverExtension(() -> HostedDriverProcess.command(
            List.of(
                    PYTHON,
                    DRIVER_DIRECTORY.resolve("sandgate_example_driver.py").toString(),
                    "--listen",
                    "unix://" + directory.resolve("driver.sock"),
                    "--stubs",
                    generateStubs(directory.resolve("stubs")).toString(),
                    "--probe"),
            directory.resolve("driver.sock"),
            directory.resolve("driver.log")));

    @Override
    protected ComputeDriverProvider provider() {
        return new RemoteDriverProvider();
    }

    @Override
    protected DriverSettings config() {
        requirePython();
        return HOST.process().remoteConfig().with("remote.driver", "python-example");
    }

    @Override
    protected BackendProbe probe() {
        return new RemoteBackendProbe(HOST.process().remoteConfig());
    }

    @Override
    protected SandboxSpec runningSpec() {
        return SandboxSpec.ofImage("python-example/sleeper");
    }

    @Override
    protected SandboxSpec permanentlyRefusedSpec() {
        return SandboxSpec.ofImage("missing/sleeper");
    }

    @Override
    protected Duration readinessTimeout() {
        return Duration.ofSeconds(20);
    }

    /** Skips (or, with sandgate.requireEngines, fails) when Debian's Python gRPC packages are missing. */
    private static void requirePython() {
        String missing = "Debian's python3-grpcio, python3-protobuf and python3-grpc-tools are not installed for "
                + PYTHON + " (scripts/engines/python.sh installs them)";
        boolean present;
        try {
            Process check = new ProcessBuilder(PYTHON, "-c", "import grpc, google.protobuf, grpc_tools")
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
            present = check.waitFor(60, TimeUnit.SECONDS) && check.exitValue() == 0;
        } catch (IOException e) {
            present = false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        if (!present) {
            if (Boolean.getBoolean("sandgate.requireEngines")) {
                throw new AssertionError(missing + " (sandgate.requireEngines=true: a missing backend is a failure)");
            }
            System.out.println("[sandgate-kit] " + PythonExampleDriverConformanceTest.class.getName()
                    + ": SKIPPED, no test of the kit ran: " + missing);
            Assumptions.abort(missing);
        }
    }

    /** Runs the example's generate-stubs.sh with google.rpc's protos unpacked from the class path. */
    static Path generateStubs(Path output) {
        try {
            Path google = Files.createDirectories(output.resolveSibling("google-protos"));
            for (String proto : List.of("google/rpc/status.proto", "google/rpc/error_details.proto")) {
                Path target = google.resolve(proto);
                Files.createDirectories(target.getParent());
                try (InputStream in = PythonExampleDriverConformanceTest.class.getResourceAsStream("/" + proto)) {
                    if (in == null) {
                        throw new IllegalStateException(
                                proto + " is not on the class path (proto-google-common-protos)");
                    }
                    Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
                }
            }
            Process generate = new ProcessBuilder(
                            "sh",
                            DRIVER_DIRECTORY.resolve("generate-stubs.sh").toString(),
                            output.toString(),
                            google.toString())
                    .redirectErrorStream(true)
                    .start();
            String printed =
                    new String(generate.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            if (!generate.waitFor(120, TimeUnit.SECONDS) || generate.exitValue() != 0) {
                throw new IllegalStateException("generate-stubs.sh failed: " + printed);
            }
            return output;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
