package dev.sandgate.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The validation and defensive copies of the SPI's value records. */
class RecordsTest {
    @Test
    void aSpecNeverShowsEnvironmentValues() {
        var spec = new SandboxSpec(
                "image:1", List.of(), List.of(), Map.of("TOKEN", "s3cr3t-value"), Map.of(), ResourceRequests.NONE);

        assertThat(spec.toString()).contains("TOKEN").doesNotContain("s3cr3t-value");
    }

    @Test
    void aSpecChecksImageEnvironmentNamesAndLabelsNamingTheField() {
        assertThat(catchThrowableOfType(DriverException.class, () -> SandboxSpec.ofImage(" "))
                        .getMessage())
                .startsWith("spec.image: ");
        assertThat(catchThrowableOfType(DriverException.class, () -> SandboxSpec.ofImage("has space"))
                        .getMessage())
                .startsWith("spec.image: ");
        assertThat(catchThrowableOfType(
                                DriverException.class,
                                () -> new SandboxSpec(
                                        "image",
                                        List.of(),
                                        List.of(),
                                        Map.of("1BAD", "v"),
                                        Map.of(),
                                        ResourceRequests.NONE))
                        .getMessage())
                .startsWith("spec.environment[1BAD]: ");
        assertThat(catchThrowableOfType(
                                DriverException.class,
                                () -> new SandboxSpec(
                                        "image",
                                        List.of(),
                                        List.of(),
                                        Map.of(),
                                        Map.of("team", "has space"),
                                        ResourceRequests.NONE))
                        .getMessage())
                .startsWith("spec.labels[team]: ");
    }

    @Test
    void aSpecCopiesItsCollections() {
        var environment = new HashMap<>(Map.of("A", "1"));
        var spec = new SandboxSpec("image", List.of(), List.of(), environment, Map.of(), ResourceRequests.NONE);

        environment.put("B", "2");

        assertThat(spec.environment()).containsOnlyKeys("A");
        assertThatThrownBy(() -> spec.labels().put("x", "y")).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void labelKeysAndValuesFollowKubernetesRules() {
        Labels.requireValid("labels", Map.of("team", "blue", "example.org/tier", "gold", "empty", ""));
        for (Map<String, String> bad : List.of(
                Map.of("", "v"),
                Map.of("-team", "v"),
                Map.of("Example.org/tier", "v"),
                Map.of("team", "v".repeat(64)),
                Map.of("team", "-v"))) {
            DriverException refused =
                    catchThrowableOfType(DriverException.class, () -> Labels.requireValid("labels", bad));
            assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
            assertThat(refused.getMessage()).startsWith("labels");
        }
        Map<String, String> tooMany = new HashMap<>();
        for (int i = 0; i <= Labels.MAX_USER_LABELS; i++) {
            tooMany.put("label" + i, "v");
        }
        assertThat(catchThrowableOfType(DriverException.class, () -> Labels.requireValid("labels", tooMany)))
                .isNotNull();
    }

    @Test
    void reservedLabelsAreThoseUnderTheSandgatePrefix() {
        assertThat(Labels.isReserved(Labels.SANDBOX_ID)).isTrue();
        assertThat(Labels.isReserved("sandgate.dev/anything")).isTrue();
        assertThat(Labels.isReserved("example.org/sandgate.dev")).isFalse();
        assertThat(Labels.isReserved("team")).isFalse();
    }

    @Test
    void identityMismatchListsOnlyTheAttributesThatDiffer() {
        var ref = new SandboxRef(Identifiers.newSandboxId(), "ws", "asked");

        DriverException nameOnly = DriverException.identityMismatch(ref, "ws", "actual");
        DriverException both = DriverException.identityMismatch(ref, "other", "actual");

        assertThat(nameOnly.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
        assertThat(nameOnly.mismatches()).containsExactly(new Mismatch(Mismatch.NAME, "asked", "actual"));
        assertThat(both.mismatches())
                .containsExactly(
                        new Mismatch(Mismatch.WORKSPACE, "ws", "other"),
                        new Mismatch(Mismatch.NAME, "asked", "actual"));
    }

    @Test
    void generationMismatchCarriesExpectedAndActual() {
        var ref = new SandboxRef(Identifiers.newSandboxId(), "ws", "name");

        DriverException stale = DriverException.generationMismatch(ref, 1, 2);

        assertThat(stale.code()).isEqualTo(DriverErrorCode.FAILED_PRECONDITION);
        assertThat(stale.mismatches()).containsExactly(new Mismatch(Mismatch.GENERATION, "1", "2"));
        assertThat(DriverException.notFound(ref).code()).isEqualTo(DriverErrorCode.NOT_FOUND);
        assertThat(DriverException.notFound(ref).mismatches()).isEmpty();
    }

    @Test
    void anObservationHasAGenerationOfAtLeastOneAndCopiesItsLabels() {
        var ref = new SandboxRef(Identifiers.newSandboxId(), "ws", "name");
        var labels = new HashMap<>(Map.of("team", "blue"));
        var observation = new SandboxObservation(ref, 1, SandboxState.RUNNING, "", labels, "");

        labels.put("other", "x");

        assertThat(observation.labels()).containsOnlyKeys("team");
        assertThatThrownBy(() -> new SandboxObservation(ref, 0, SandboxState.RUNNING, "", Map.of(), ""))
                .isInstanceOf(DriverException.class)
                .hasMessageStartingWith("observation.generation: ");
    }

    @Test
    void resourceRequestsAreNotNegative() {
        assertThat(catchThrowableOfType(DriverException.class, () -> new ResourceRequests(-1, 0))
                        .getMessage())
                .startsWith("resources.memory_bytes: ");
        assertThat(catchThrowableOfType(DriverException.class, () -> new ResourceRequests(0, -1))
                        .getMessage())
                .startsWith("resources.milli_cpus: ");
    }

    @Test
    void capabilitiesCopyTheirFields() {
        var fields = new HashSet<>(Set.of(PolicyField.MEMORY_LIMIT));
        var capabilities = new DriverCapabilities(fields, false, true);

        fields.add(PolicyField.CPU_LIMIT);

        assertThat(capabilities.enforceablePolicyFields()).containsExactly(PolicyField.MEMORY_LIMIT);
    }

    @Test
    void availabilityAlwaysCarriesAReason() {
        assertThat(Availability.unavailable("no socket at /run/x.sock").reason())
                .contains("/run/x.sock");
        assertThat(Availability.available("found").available()).isTrue();
        assertThatThrownBy(() -> new Availability(false, null)).isInstanceOf(NullPointerException.class);
    }
}
