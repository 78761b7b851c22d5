package dev.sandgate.driver.toolkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.DynamicPolicy;
import dev.sandgate.spi.LaunchInput;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.Mismatch;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.StaticPolicy;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class StartDecisionTest {
    static final SandboxRef REF = new SandboxRef("0b6f7c1e-3a52-4c8e-9d0a-1f2e3d4c5b6a", "team", "box");

    static LaunchInput launch(long generation, String document) {
        byte[] bytes = document.getBytes(StandardCharsets.UTF_8);
        return new LaunchInput(
                generation,
                new LaunchPolicy(1, LaunchPolicy.digestOf(bytes), bytes, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY));
    }

    private static final LaunchInput G3 = launch(3, "{}");
    private static final String DIGEST = G3.policy().digest();

    @Test
    void theSameGenerationRunningIsAReplay() {
        assertThat(StartDecision.decide(REF, G3, 3, DIGEST, true, true)).isEqualTo(StartDecision.REPLAY);
        assertThat(StartDecision.REPLAY.launches()).isFalse();
    }

    @Test
    void theSameGenerationStoppedIsRelaunched() {
        assertThat(StartDecision.decide(REF, G3, 3, DIGEST, false, true)).isEqualTo(StartDecision.RELAUNCH);
        assertThat(StartDecision.RELAUNCH.launches()).isTrue();
    }

    @Test
    void aLowerGenerationStoppedIsLaunched() {
        assertThat(StartDecision.decide(REF, G3, 2, "other", false, true)).isEqualTo(StartDecision.LAUNCH);
    }

    @Test
    void anOlderInputIsRefusedWithTheGenerationMismatch() {
        assertThatThrownBy(() -> StartDecision.decide(REF, G3, 4, DIGEST, false, true))
                .isInstanceOfSatisfying(DriverException.class, e -> {
                    assertThat(e.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
                    assertThat(e.mismatches()).containsExactly(new Mismatch(Mismatch.GENERATION, "3", "4"));
                });
    }

    @Test
    void anotherGenerationRunningIsRefused() {
        assertThatThrownBy(() -> StartDecision.decide(REF, G3, 2, DIGEST, true, true))
                .isInstanceOfSatisfying(
                        DriverException.class,
                        e -> assertThat(e.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION));
    }

    @Test
    void theSameGenerationWithAnotherPolicyIsRefusedEvenWhenRunning() {
        assertThatThrownBy(() -> StartDecision.decide(REF, G3, 3, "other", true, true))
                .isInstanceOfSatisfying(
                        DriverException.class,
                        e -> assertThat(e.mismatches())
                                .extracting(Mismatch::subject)
                                .containsExactly(Mismatch.POLICY_DIGEST));
    }

    @Test
    void aChangedPolicyIsUnsupportedWithoutLaunchPolicyOnStart() {
        assertThatThrownBy(() -> StartDecision.decide(REF, G3, 2, "other", false, false))
                .isInstanceOfSatisfying(
                        DriverException.class, e -> assertThat(e.code()).isEqualTo(DriverErrorCode.UNSUPPORTED));
        assertThat(StartDecision.decide(REF, G3, 2, DIGEST, false, false)).isEqualTo(StartDecision.LAUNCH);
    }
}
