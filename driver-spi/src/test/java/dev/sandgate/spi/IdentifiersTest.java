package dev.sandgate.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.NullAndEmptySource;
import org.junit.jupiter.params.provider.ValueSource;

class IdentifiersTest {
    private static DriverException refusal(Runnable call) {
        DriverException refused = catchThrowableOfType(DriverException.class, call::run);
        assertThat(refused).as("a DriverException").isNotNull();
        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        return refused;
    }

    @Test
    void aNewSandboxIdIsACanonicalLowercaseUuid() {
        String id = Identifiers.newSandboxId();

        assertThat(Identifiers.requireSandboxId("id", id)).isEqualTo(id);
        assertThat(UUID.fromString(id).toString()).isEqualTo(id);
    }

    @ParameterizedTest
    @NullAndEmptySource
    @ValueSource(
            strings = {"not-a-uuid", "6F9619FF-8B86-D011-B42D-00C04FC964FF", "{6f9619ff-8b86-d011-b42d-00c04fc964ff}"})
    void aSandboxIdThatIsNotACanonicalLowercaseUuidIsRefusedNamingTheField(String id) {
        assertThat(refusal(() -> Identifiers.requireSandboxId("ref.id", id)).getMessage())
                .startsWith("ref.id: ");
    }

    @ParameterizedTest
    @ValueSource(strings = {"a", "0", "a-b", "kit-a", "x1-2-3"})
    void dnsLabelsAreAccepted(String label) {
        assertThat(Identifiers.requireDnsLabel("ref.name", label)).isEqualTo(label);
    }

    @ParameterizedTest
    @NullAndEmptySource
    @ValueSource(strings = {"A", "-a", "a-", "a_b", "a.b", "a b", "é"})
    void whatIsNotADnsLabelIsRefusedNamingTheField(String label) {
        assertThat(refusal(() -> Identifiers.requireDnsLabel("ref.name", label)).getMessage())
                .startsWith("ref.name: ");
    }

    @Test
    void aDnsLabelIsAtMost63Characters() {
        assertThat(Identifiers.requireDnsLabel("ref.name", "a".repeat(63))).hasSize(63);
        assertThat(refusal(() -> Identifiers.requireDnsLabel("ref.name", "a".repeat(64)))
                        .getMessage())
                .contains("63");
    }

    @Test
    void aGatewayIdIsAtMost40Characters() {
        assertThat(DriverContext.of("g".repeat(40)).gatewayId()).hasSize(40);
        assertThat(refusal(() -> DriverContext.of("g".repeat(41))).getMessage()).startsWith("context.gateway_id: ");
    }

    @Test
    void aSandboxRefChecksEachPartNamingIt() {
        String id = Identifiers.newSandboxId();

        assertThat(refusal(() -> new SandboxRef("", "ws", "name")).getMessage()).startsWith("ref.id: ");
        assertThat(refusal(() -> new SandboxRef(id, "Ws", "name")).getMessage()).startsWith("ref.workspace: ");
        assertThat(refusal(() -> new SandboxRef(id, "ws", "")).getMessage()).startsWith("ref.name: ");
        assertThat(new SandboxRef(id, "ws", "name")).hasToString("ws/name (" + id + ")");
    }
}
