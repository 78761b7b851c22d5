package dev.sandgate.distribution;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** The assembled distribution folder under test (target/sandgate), and a way to run its launchers. */
final class Distribution {
    /** The first-party drivers, each in drivers/NAME/. */
    static final List<String> DRIVERS = List.of("reference", "docker", "podman", "kubernetes", "vm");

    private static final Duration COMMAND_LIMIT = Duration.ofSeconds(90);

    private Distribution() {}

    /** The folder the build assembled; the build passes its path in {@code sandgate.distribution}. */
    static Path home() {
        String home = System.getProperty("sandgate.distribution");
        if (home == null) {
            throw new IllegalStateException(
                    "sandgate.distribution is not set: run these tests through Maven (./mvnw -pl distribution verify)");
        }
        return Path.of(home);
    }

    /** What a command printed and how it ended. */
    record Result(int status, String out, String err) {}

    /**
     * A process builder for a launcher in bin/, with an environment free of the caller's SANDGATE_* settings and with
     * JAVA_HOME set to the JDK running the tests.
     */
    static ProcessBuilder launcher(String name, List<String> args) {
        List<String> command = new ArrayList<>();
        command.add(home().resolve("bin").resolve(name).toString());
        command.addAll(args);
        ProcessBuilder builder = new ProcessBuilder(command);
        Map<String, String> environment = builder.environment();
        environment.keySet().removeIf(key -> key.startsWith("SANDGATE_") || key.equals("JAVA_OPTS"));
        environment.put("JAVA_HOME", System.getProperty("java.home"));
        return builder;
    }

    /** Runs a launcher to completion (within a generous limit) and returns what it printed. */
    static Result run(Path scratch, String name, String... args) {
        try {
            Path out = Files.createTempFile(scratch, name, ".out");
            Path err = Files.createTempFile(scratch, name, ".err");
            Process process = launcher(name, List.of(args))
                    .redirectOutput(out.toFile())
                    .redirectError(err.toFile())
                    .redirectInput(
                            ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                    .start();
            if (!process.waitFor(COMMAND_LIMIT.toSeconds(), TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
                throw new AssertionError(name + " " + String.join(" ", args) + " did not finish within "
                        + COMMAND_LIMIT.toSeconds() + " s");
            }
            return new Result(
                    process.exitValue(),
                    Files.readString(out, StandardCharsets.UTF_8),
                    Files.readString(err, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
