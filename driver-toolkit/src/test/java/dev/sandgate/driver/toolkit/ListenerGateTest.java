package dev.sandgate.driver.toolkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ListenerGateTest {
    private final ListenerGate gate = new ListenerGate();
    private final List<String> calls = new ArrayList<>();

    @Test
    void outputIsDeliveredUntilTheFinalCallbackAndNotAfter() {
        gate.output(() -> calls.add("out 1"));
        assertThat(gate.finish(() -> calls.add("exited"))).isTrue();
        gate.output(() -> calls.add("out 2"));

        assertThat(calls).containsExactly("out 1", "exited");
        assertThat(gate.finished()).isTrue();
    }

    @Test
    void onlyTheFirstFinalCallbackRuns() {
        assertThat(gate.finish(() -> calls.add("failed"))).isTrue();
        assertThat(gate.finish(() -> calls.add("exited"))).isFalse();

        assertThat(calls).containsExactly("failed");
    }

    @Test
    void noOutputAfterCloseButTheFinalCallbackThatReportsTheClose() {
        assertThat(gate.close()).isTrue();
        assertThat(gate.close()).isFalse();
        gate.output(() -> calls.add("out"));
        gate.finish(() -> calls.add("aborted"));

        assertThat(gate.closed()).isTrue();
        assertThat(calls).containsExactly("aborted");
    }

    @Test
    void aSilentFinishSuppressesEveryLaterCallback() {
        gate.finishSilently();
        gate.output(() -> calls.add("out"));

        assertThat(gate.finish(() -> calls.add("completed"))).isFalse();
        assertThat(calls).isEmpty();
    }
}
