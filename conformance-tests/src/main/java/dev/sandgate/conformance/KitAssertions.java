package dev.sandgate.conformance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.sandgate.spi.DriverErrorCode;
import dev.sandgate.spi.DriverException;
import dev.sandgate.spi.SandboxEvent;
import dev.sandgate.spi.SandboxObservation;
import dev.sandgate.spi.SandboxRef;
import dev.sandgate.spi.SandboxSpec;
import dev.sandgate.spi.SandboxState;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.function.Predicate;
import org.junit.jupiter.api.function.Executable;

/**
 * Assertions and matchers that the rule layers share, so that a rule reads as the behaviour it checks and every layer
 * reports a violation in the same words.
 */
final class KitAssertions {
    private KitAssertions() {}

    static void assertObserved(SandboxObservation observation, SandboxRef ref, long generation, String digest) {
        assertThat(observation.ref()).as("observed identity").isEqualTo(ref);
        assertThat(observation.generation()).as("observed generation").isEqualTo(generation);
        assertThat(observation.policyDigest()).as("observed policy digest").isEqualTo(digest);
    }

    /** Every variable of {@code expected} with exactly its value; the backend may add its own. */
    static void assertEnvironment(Map<String, String> expected, Map<String, String> launched, String when) {
        var wrong = new TreeMap<String, String>();
        expected.forEach((name, value) -> {
            if (!launched.containsKey(name)) {
                wrong.put(name, "missing");
            } else if (!launched.get(name).equals(value)) {
                wrong.put(name, "launched as " + quoted(launched.get(name)) + ", given " + quoted(value));
            }
        });
        if (!wrong.isEmpty()) {
            fail("the spec's environment did not reach the sandbox unchanged in " + when + ": " + wrong);
        }
    }

    private static String quoted(String value) {
        return '"' + value.replace("\\", "\\\\").replace("\n", "\\n").replace("\"", "\\\"") + '"';
    }

    static SandboxSpec withLabels(SandboxSpec spec, Map<String, String> labels) {
        Map<String, String> merged = new HashMap<>(spec.labels());
        merged.putAll(labels);
        return new SandboxSpec(spec.image(), spec.command(), spec.args(), spec.environment(), merged, spec.resources());
    }

    static Predicate<SandboxEvent> snapshotOf(SandboxRef ref, SandboxState state, long generation) {
        return event -> event instanceof SandboxEvent.Snapshot snapshot
                && snapshot.observation().ref().id().equals(ref.id())
                && snapshot.observation().state() == state
                && snapshot.observation().generation() == generation;
    }

    static Predicate<SandboxEvent> deletedOf(SandboxRef ref) {
        return event -> event instanceof SandboxEvent.Deleted deleted
                && deleted.ref().id().equals(ref.id());
    }

    /** Runs {@code call}, which must fail with {@code code}; returns the failure. */
    static DriverException expectFailure(DriverErrorCode code, Callable<?> call) {
        Object answer;
        try {
            answer = call.call();
        } catch (DriverException refused) {
            assertThat(refused.code())
                    .as("expected %s, got %s: %s", code, refused.code(), refused.getMessage())
                    .isEqualTo(code);
            return refused;
        } catch (Exception e) {
            throw new AssertionError("expected a DriverException with " + code + ", got " + e, e);
        }
        return fail("expected a DriverException with %s, but the call answered %s", code, answer);
    }

    static DriverException expectFailure(DriverErrorCode code, Executable call) {
        return expectFailure(code, () -> {
            try {
                call.execute();
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable e) {
                throw new AssertionError(e);
            }
            return "normally";
        });
    }
}
