package dev.sandgate.benchmarks.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EngineBenchmarkBareCallTest {
    /** Every call of every side, and every bare call, in the order they happened. */
    private final List<String> calls = new ArrayList<>();

    @Test
    void aBareCallPrecedesEachOfTheFiveCallsOfALifecycle() {
        EngineBenchmark.lifecycle(new RecordingSide("driver"), "s0", null, () -> calls.add("bare"));

        assertThat(calls)
                .containsExactly(
                        "bare",
                        "driver create",
                        "bare",
                        "driver stop",
                        "bare",
                        "driver start",
                        "bare",
                        "driver stop",
                        "bare",
                        "driver delete");
    }

    @Test
    void bareCallsAreMadeOnlyBeforeTheProbedSidesCallsAndKeptOnlyForMeasuredIterations() {
        var settings = EngineBenchmarkSettings.parse(new String[] {"--iterations", "30", "--warmup", "2"}, Map.of());
        List<LifecycleSide> sides = List.of(
                new RecordingSide("gateway"), new RecordingSide("driver"), new RecordingSide("direct docker-java"));
        Samples bareCalls = new Samples();

        var measured = EngineBenchmark.measure(
                settings,
                sides,
                sides.get(1),
                () -> {
                    calls.add("bare");
                    return 1_000_000;
                },
                bareCalls);

        assertThat(bareCalls.count()).isEqualTo(30 * 5);
        assertThat(calls.stream().filter("bare"::equals)).hasSize(32 * 5);
        for (int i = 0; i < calls.size(); i++) {
            if (calls.get(i).equals("bare")) {
                assertThat(calls.get(i + 1))
                        .as("the call after bare call %d", i)
                        .startsWith("driver ");
            }
        }
        assertThat(measured.get("driver").get(Operation.DELETE).count()).isEqualTo(30);
    }

    @Test
    void theBareCallLineGivesItsPercentilesAndWhatTheGatewayAddsPerOperation() {
        Samples bareCalls = new Samples();
        bareCalls.add(2_000_000);
        Map<String, Map<Operation, Samples>> measured = new LinkedHashMap<>();
        measured.put("gateway", TestSamples.everyOperationTook(13));
        measured.put("driver", TestSamples.everyOperationTook(10));
        measured.put("direct docker-java", TestSamples.everyOperationTook(10));

        String line = EngineBenchmark.bareCallLine(bareCalls, measured);

        assertThat(line)
                .contains("p50 2.00 ms, p99 2.00 ms over 1 calls")
                .contains("create (+ launch) +3.0, stop +3.0, start (relaunch) +3.0, delete +3.0");
    }

    @Test
    void withoutBareCallsThereIsNoLine() {
        assertThat(EngineBenchmark.bareCallLine(new Samples(), Map.of())).isEmpty();
    }

    private final class RecordingSide implements LifecycleSide {
        private final String label;

        RecordingSide(String label) {
            this.label = label;
        }

        @Override
        public String label() {
            return label;
        }

        @Override
        public String create(String name) {
            calls.add(label + " create");
            return name;
        }

        @Override
        public void stop(String handle) {
            calls.add(label + " stop");
        }

        @Override
        public void start(String handle) {
            calls.add(label + " start");
        }

        @Override
        public void delete(String handle) {
            calls.add(label + " delete");
        }

        @Override
        public void close() {}
    }
}
