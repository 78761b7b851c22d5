package dev.sandgate.driver.reference;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import dev.sandgate.testing.ProcessTest;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several processes over one directory, as the gateway's crash-and-restart tests run it: the file locks serialize
 * them, and what one process did is what the others see.
 */
@ProcessTest
class CrossProcessTest {
    private static final int SANDBOXES = 40;

    @TempDir
    Path directory;

    private final String gatewayId = "cross-" + Long.toHexString(System.nanoTime());

    @Test
    void createsRacingInTwoProcessesCreateEachSandboxOnce() throws Exception {
        List<String> ids = newIds();

        List<Map<String, String>> answers = race("create", ids, 2);

        for (String id : ids) {
            assertThat(answers)
                    .as("answers of both processes for %s", id)
                    .extracting(answer -> answer.get(id))
                    .containsExactlyInAnyOrder("created", "existing");
        }
        try (ComputeDriver driver = driver()) {
            assertThat(driver.list()).hasSize(SANDBOXES);
        }
    }

    @Test
    void deletesRacingInTwoProcessesDeleteEachSandboxOnce() throws Exception {
        List<String> ids = newIds();
        try (ComputeDriver driver = driver()) {
            for (String id : ids) {
                driver.create(CrossProcessWorker.ref(id), SandboxSpec.ofImage("worker"), TestInputs.launch(1));
            }
        }

        List<Map<String, String>> answers = race("delete", ids, 2);

        for (String id : ids) {
            assertThat(answers)
                    .as("answers of both processes for %s", id)
                    .extracting(answer -> answer.get(id))
                    .containsExactlyInAnyOrder("deleted", "absent");
        }
        try (ComputeDriver driver = driver()) {
            assertThat(driver.list()).isEmpty();
        }
    }

    @Test
    void anotherProcessSeesWhatThisOneDid() throws Exception {
        List<String> ids = newIds().subList(0, 2);
        try (ComputeDriver driver = driver()) {
            for (String id : ids) {
                driver.create(CrossProcessWorker.ref(id), SandboxSpec.ofImage("worker"), TestInputs.launch(1));
            }
            driver.stop(CrossProcessWorker.ref(ids.get(1)), OptionalLong.of(1));
        }

        Map<String, String> seen = race("get", ids, 1).get(0);

        assertThat(seen)
                .containsEntry(ids.get(0), SandboxState.RUNNING + "@1")
                .containsEntry(ids.get(1), SandboxState.STOPPED + "@1");
    }

    private ComputeDriver driver() {
        return new ReferenceDriverProvider()
                .create(
                        DriverSettings.EMPTY.with(ReferenceDriverProvider.DIRECTORY, directory.toString()),
                        DriverContext.of(gatewayId));
    }

    private static List<String> newIds() {
        return IntStream.range(0, SANDBOXES)
                .mapToObj(i -> Identifiers.newSandboxId())
                .toList();
    }

    /** Starts {@code processes} workers, releases them together, and returns each one's answers by sandbox id. */
    private List<Map<String, String>> race(String operation, List<String> ids, int processes) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(
                java,
                "-cp",
                System.getProperty("java.class.path"),
                CrossProcessWorker.class.getName(),
                directory.toString(),
                gatewayId,
                operation));
        command.addAll(ids);
        List<Process> workers = new ArrayList<>();
        List<BufferedReader> outputs = new ArrayList<>();
        try {
            for (int i = 0; i < processes; i++) {
                Process worker = new ProcessBuilder(command)
                        .redirectError(ProcessBuilder.Redirect.INHERIT)
                        .start();
                workers.add(worker);
                outputs.add(new BufferedReader(new InputStreamReader(worker.getInputStream(), StandardCharsets.UTF_8)));
            }
            for (BufferedReader output : outputs) {
                assertThat(output.readLine()).as("a worker's first line").isEqualTo("ready");
            }
            for (Process worker : workers) {
                OutputStream input = worker.getOutputStream();
                input.write('\n');
                input.flush();
            }
            List<Map<String, String>> answers = new ArrayList<>();
            for (int i = 0; i < processes; i++) {
                Map<String, String> byId = new HashMap<>();
                for (String line = outputs.get(i).readLine();
                        line != null;
                        line = outputs.get(i).readLine()) {
                    String[] parts = line.split(" ", 2);
                    byId.put(parts[0], parts[1]);
                }
                assertThat(workers.get(i).waitFor(60, TimeUnit.SECONDS)).isTrue();
                assertThat(workers.get(i).exitValue()).as("worker exit code").isZero();
                answers.add(byId);
            }
            return answers;
        } finally {
            for (Process worker : workers) {
                worker.destroyForcibly();
            }
            for (BufferedReader output : outputs) {
                closeQuietly(output);
            }
        }
    }

    private static void closeQuietly(BufferedReader reader) {
        try {
            reader.close();
        } catch (IOException e) {
            // the worker is gone
        }
    }
}
