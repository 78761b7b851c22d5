package dev.sandgate.spi;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The Optional-returning parses of stamps, and the factories of the common refusals. */
class StampParsingAndRefusalsTest {
    private static final String ID = "0b6f7c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e";
    private static final SandboxRef REF = new SandboxRef(ID, "team", "box");

    @Test
    void aRefParsesFromValidStampsOnly() {
        assertThat(SandboxRef.parse(ID, "team", "box")).contains(REF);
        assertThat(SandboxRef.parse(null, "team", "box")).isEmpty();
        assertThat(SandboxRef.parse(ID.toUpperCase(Locale.ROOT), "team", "box")).isEmpty();
        assertThat(SandboxRef.parse(ID, "Team", "box")).isEmpty();
        assertThat(SandboxRef.parse(ID, "team", "")).isEmpty();
        assertThat(SandboxRef.parse(ID, "team", "b".repeat(64))).isEmpty();
        assertThat(SandboxRef.parse(ID, "team", null)).isEmpty();

        var stamps = new HashMap<>(Map.of(Labels.SANDBOX_ID, ID, Labels.WORKSPACE, "team", Labels.NAME, "box"));
        assertThat(SandboxRef.fromStamps(stamps)).contains(REF);
        stamps.remove(Labels.NAME);
        assertThat(SandboxRef.fromStamps(stamps)).isEmpty();
    }

    @Test
    void aGenerationStampIsADecimalOfAtLeastOne() {
        assertThat(Labels.parseGeneration("1")).isEqualTo(OptionalLong.of(1));
        assertThat(Labels.parseGeneration("42")).isEqualTo(OptionalLong.of(42));
        assertThat(Labels.parseGeneration(Long.toString(Long.MAX_VALUE))).isEqualTo(OptionalLong.of(Long.MAX_VALUE));
        for (String malformed : new String[] {null, "", "0", "-1", "+1", " 1", "1.0", "x", "9223372036854775808"}) {
            assertThat(Labels.parseGeneration(malformed)).as("'%s'", malformed).isEmpty();
        }
    }

    @Test
    void eachRefusalCarriesItsCodeAndMismatch() {
        assertThat(DriverException.sandboxIdMismatch(REF, "other")).satisfies(e -> {
            assertThat(e.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
            assertThat(e.mismatches()).containsExactly(new Mismatch(Mismatch.SANDBOX_ID, ID, "other"));
        });
        assertThat(DriverException.launchRefused(REF, 1, 2)).satisfies(e -> {
            assertThat(e.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
            assertThat(e.mismatches()).containsExactly(new Mismatch(Mismatch.GENERATION, "1", "2"));
        });
        assertThat(DriverException.policyDigestMismatch(REF, "sha256:a", "sha256:b"))
                .satisfies(e -> assertThat(e.mismatches())
                        .containsExactly(new Mismatch(Mismatch.POLICY_DIGEST, "sha256:a", "sha256:b")));
        assertThat(DriverException.replaced(REF, "c0ffee", "stop").code()).isEqualTo(DriverErrorCode.ABORTED);

        byte[] document = "{}".getBytes(StandardCharsets.UTF_8);
        var policy = new LaunchPolicy(
                1, LaunchPolicy.digestOf(document), document, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY);
        DriverException exists = DriverException.alreadyExists(REF, new LaunchInput(2, policy), 1, policy.digest());
        assertThat(exists.code()).isEqualTo(DriverErrorCode.ALREADY_EXISTS);
        assertThat(exists.mismatches()).containsExactly(new Mismatch(Mismatch.GENERATION, "2", "1"));
    }
}
