package dev.sandgate.benchmarks.engine;

import java.util.EnumMap;
import java.util.Map;

/** Samples for the engine benchmark's report tests. */
final class TestSamples {
    private TestSamples() {}

    /** One sample of {@code millis} for every operation. */
    static Map<Operation, Samples> everyOperationTook(long millis) {
        Map<Operation, Samples> perOperation = new EnumMap<>(Operation.class);
        for (Operation operation : Operation.values()) {
            Samples samples = new Samples();
            samples.add(millis * 1_000_000);
            perOperation.put(operation, samples);
        }
        return perOperation;
    }
}
