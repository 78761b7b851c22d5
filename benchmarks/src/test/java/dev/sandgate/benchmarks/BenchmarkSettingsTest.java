package dev.sandgate.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class BenchmarkSettingsTest {
    @Test
    void theFullRunStoresTenThousandSandboxesAndMeasuresOneSixteenAndSixtyFourClients() {
        BenchmarkSettings settings = BenchmarkSettings.parse();

        assertThat(settings.storedSandboxes()).isEqualTo(10_000);
        assertThat(settings.clientCounts()).containsExactly(1, 16, 64);
    }

    @Test
    void optionsOverrideTheSmokeRun() {
        BenchmarkSettings settings =
                BenchmarkSettings.parse("--smoke", "--clients", "2,8", "--stored", "7", "--synchronous", "full");

        assertThat(settings.clientCounts()).containsExactly(2, 8);
        assertThat(settings.storedSandboxes()).isEqualTo(7);
        assertThat(settings.synchronous()).isEqualTo("FULL");
        assertThat(settings.callsPerPhase()).isEqualTo(BenchmarkSettings.SMOKE.callsPerPhase());
    }

    @Test
    void aTraceFolderIsOptional() {
        assertThat(BenchmarkSettings.parse().trace()).isEmpty();
        assertThat(BenchmarkSettings.parse("--trace", "traces").trace()).contains(java.nio.file.Path.of("traces"));
    }

    @Test
    void callsAreSplitBetweenClientsRoundingUp() {
        BenchmarkSettings settings = BenchmarkSettings.parse("--calls", "100");

        assertThat(settings.callsPerClient(1)).isEqualTo(100);
        assertThat(settings.callsPerClient(64)).isEqualTo(2);
    }

    @Test
    void rejectsAnUnknownOption() {
        assertThatThrownBy(() -> BenchmarkSettings.parse("--fast", "yes"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--fast");
    }
}
