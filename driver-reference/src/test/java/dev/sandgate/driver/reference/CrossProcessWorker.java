package dev.sandgate.driver.reference;

import dev.sandgate.spi.ComputeDriver;
import dev.sandgate.spi.DriverContext;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DriverSettings;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;

/**
 * A second process for {@link CrossProcessTest}: it opens the reference driver over a directory, prints {@code ready},
 * waits for a line on standard input (the start signal), runs one operation on every sandbox id given, and prints
 * one line per id: {@code <id> <answer>}.
 *
 * <p>Arguments: directory, gateway id, operation ({@code create}, {@code delete} or {@code get}), sandbox ids.
 */
public final class CrossProcessWorker {
    static final String WORKSPACE = "cross";

    private CrossProcessWorker() {}

    public static void main(String[] args) throws IOException {
        var config = DriverSettings.EMPTY.with(ReferenceDriverProvider.DIRECTORY, args[0]);
        try (ComputeDriver driver = new ReferenceDriverProvider().create(config, DriverContext.of(args[1]))) {
            System.out.println("ready");
            System.out.flush();
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            for (int i = 3; i < args.length; i++) {
                SandboxRef ref = ref(args[i]);
                String answer;
                try {
                    answer = switch (args[2]) {
                        case "create" ->
                            driver.create(ref, SandboxSpec.ofImage("worker"), TestInputs.launch(1))
                                            .created()
                                    ? "created"
                                    : "existing";
                        case "delete" ->
                            driver.delete(ref, OptionalLong.empty()).deleted() ? "deleted" : "absent";
                        case "get" ->
                            driver.get(ref).state() + "@" + driver.get(ref).generation();
                        default -> throw new IllegalArgumentException("unknown operation " + args[2]);
                    };
                } catch (DriverException e) {
                    answer = e.code().name();
                }
                System.out.println(ref.id() + " " + answer);
            }
        }
    }

    static SandboxRef ref(String id) {
        return new SandboxRef(id, WORKSPACE, "n" + id.substring(0, 8));
    }
}
