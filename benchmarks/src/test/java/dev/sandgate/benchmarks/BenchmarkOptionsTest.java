package dev.sandgate.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class BenchmarkOptionsTest {
    private static BenchmarkOptions parse(String... args) {
        return BenchmarkOptions.parse(args, Set.of("--calls", "--levels", "--limit", "--every"), Set.of("--smoke"));
    }

    @Test
    void valuesAreTypedAndTheLastOneGivenWins() {
        BenchmarkOptions options = parse(
                "--calls", "5", "--smoke", "--calls", "7", "--levels", "1, 16,64,", "--limit", "60s", "--every", "250");

        assertThat(options.has("--smoke")).isTrue();
        assertThat(options.integer("--calls", 1)).isEqualTo(7);
        assertThat(options.integers("--levels", List.of())).containsExactly(1, 16, 64);
        assertThat(options.seconds("--limit", Duration.ZERO)).isEqualTo(Duration.ofSeconds(60));
        assertThat(options.millis("--every", Duration.ZERO)).isEqualTo(Duration.ofMillis(250));
    }

    @Test
    void optionsNotGivenTakeTheirFallback() {
        BenchmarkOptions options = parse();

        assertThat(options.has("--smoke")).isFalse();
        assertThat(options.integer("--calls", 3, 1, 10)).isEqualTo(3);
        assertThat(options.path("--levels")).isEmpty();
    }

    @Test
    void everyRefusalNamesTheOption() {
        assertThatThrownBy(() -> parse("--fast")).hasMessageContaining("unknown option: --fast");
        assertThatThrownBy(() -> parse("--calls")).hasMessageContaining("--calls needs a value");
        assertThatThrownBy(() -> parse("--calls", "many").integer("--calls", 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--calls takes a number, got 'many'");
        assertThatThrownBy(() -> parse("--calls", "11").integer("--calls", 1, 1, 10))
                .hasMessageContaining("--calls must be 1 to 10, got 11");
    }
}
