package dev.sandgate.conformance.selftest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.sandgate.conformance.selftest.broken.UnavailableDriverKit;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;

/**
 * A driver whose backend is missing: without {@code sandgate.requireEngines} the kit skips the class and says so on
 * standard output (build tools may report such a class as 0 tests run, 0 skipped); with it, the class fails.
 */
class UnavailableDriverTest {
    private static final String PROPERTY = "sandgate.requireEngines";
    private final String before = System.getProperty(PROPERTY);

    @AfterEach
    void restoreProperty() {
        if (before == null) {
            System.clearProperty(PROPERTY);
        } else {
            System.setProperty(PROPERTY, before);
        }
    }

    @Test
    void withoutRequiredEnginesTheKitSkipsTheClassAndPrintsWhy() {
        System.setProperty(PROPERTY, "false");
        PrintStream standardOut = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        EngineExecutionResults results;
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
        try {
            results = run();
        } finally {
            System.setOut(standardOut);
        }

        assertThat(results.testEvents().succeeded().count()).isZero();
        assertThat(results.testEvents().failed().count()).isZero();
        assertThat(results.containerEvents().aborted().count()).isPositive();
        assertThat(printed.toString(StandardCharsets.UTF_8))
                .contains("[sandgate-kit] " + UnavailableDriverKit.class.getName() + ": SKIPPED")
                .contains(UnavailableDriverKit.REASON)
                .contains("-D" + PROPERTY + "=true");
    }

    @Test
    void withRequiredEnginesTheClassFailsNamingTheReason() {
        System.setProperty(PROPERTY, "true");

        EngineExecutionResults results = run();

        assertThat(results.containerEvents().failed().stream()
                        .map(event -> event.getPayload(TestExecutionResult.class)
                                .flatMap(TestExecutionResult::getThrowable)
                                .map(Throwable::getMessage)
                                .orElse(""))
                        .toList())
                .anySatisfy(message -> assertThat(message).contains(UnavailableDriverKit.REASON));
        assertThat(results.testEvents().succeeded().count()).isZero();
    }

    private static EngineExecutionResults run() {
        return EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(UnavailableDriverKit.class))
                .execute();
    }
}
