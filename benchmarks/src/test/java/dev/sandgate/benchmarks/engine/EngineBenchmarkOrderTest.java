package dev.sandgate.benchmarks.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EngineBenchmarkOrderTest {
    private static final List<String> SIDES = List.of("gateway", "driver", "direct");

    @Test
    void everySideRunsInEveryPositionEquallyOftenOverTwoRounds() {
        Map<String, Integer> counts = new HashMap<>();
        for (int i = 0; i < 2 * SIDES.size(); i++) {
            List<String> order = EngineBenchmark.order(SIDES, i);
            assertThat(order).containsExactlyInAnyOrderElementsOf(SIDES);
            for (int position = 0; position < order.size(); position++) {
                counts.merge(order.get(position) + "@" + position, 1, Integer::sum);
            }
        }
        assertThat(counts)
                .hasSize(SIDES.size() * SIDES.size())
                .allSatisfy((key, count) -> assertThat(count).as(key).isEqualTo(2));
    }

    @Test
    void everySideFollowsEveryOtherSideEquallyOftenOverTwoRounds() {
        Map<String, Integer> pairs = new HashMap<>();
        for (int i = 0; i < 2 * SIDES.size(); i++) {
            List<String> order = EngineBenchmark.order(SIDES, i);
            for (int position = 1; position < order.size(); position++) {
                pairs.merge(order.get(position - 1) + ">" + order.get(position), 1, Integer::sum);
            }
        }
        assertThat(pairs)
                .hasSize(SIDES.size() * (SIDES.size() - 1))
                .allSatisfy((key, count) -> assertThat(count).as(key).isEqualTo(2));
    }

    @Test
    void theTableReportsEverySideAndBothRatios() {
        Map<String, Map<Operation, Samples>> measured = new java.util.LinkedHashMap<>();
        measured.put("gateway", TestSamples.everyOperationTook(110));
        measured.put("driver", TestSamples.everyOperationTook(105));
        measured.put("direct docker-java", TestSamples.everyOperationTook(100));
        var settings = EngineBenchmarkSettings.parse(new String[0], Map.of());

        String table = EngineBenchmark.table(settings, "9.9", measured);

        assertThat(table).contains("| gateway p50 | gateway p99 | driver p50 | driver p99 | direct p50 | direct p99 |");
        assertThat(table)
                .contains("| stop | 110.0 | 110.0 | 105.0 | 105.0 | 100.0 | 100.0 | 1.10 | 1.10 | 1.05 | 1.05 |");
    }
}
