package dev.sandgate.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.regex.Pattern;
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

    /**
     * The checks are written by hand for speed; the regular expressions of the contract stay here as their oracle.
     * Strings near both forms (every single-character change of valid ids and labels, and random strings over the
     * characters that matter) must get the same answer from both.
     */
    @Test
    void theHandWrittenChecksAgreeWithTheRegularExpressionsOfTheContract() {
        Pattern uuid = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
        Pattern dnsLabel = Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
        String alphabet = "0af9gzAF-_.: \u00e9";
        var random = new Random(20261203);
        List<String> candidates = new ArrayList<>(List.of("", "-", "--", "a--b", "a-", "-a", "0", "z"));
        for (String valid : List.of(Identifiers.newSandboxId(), "kit-a-1", "x")) {
            candidates.add(valid);
            candidates.add(valid + "a");
            candidates.add(valid.substring(1));
            for (int i = 0; i < valid.length(); i++) {
                for (int j = 0; j < alphabet.length(); j++) {
                    char c = alphabet.charAt(j);
                    candidates.add(valid.substring(0, i) + c + valid.substring(i + 1));
                }
            }
        }
        for (int n = 0; n < 20_000; n++) {
            var text = new StringBuilder();
            int length = random.nextInt(40);
            for (int i = 0; i < length; i++) {
                text.append(random.nextInt(4) == 0 ? '-' : alphabet.charAt(random.nextInt(alphabet.length())));
            }
            candidates.add(text.toString());
        }

        int uuids = 0;
        int labels = 0;
        for (String candidate : candidates) {
            boolean isUuid = uuid.matcher(candidate).matches();
            boolean isLabel = dnsLabel.matcher(candidate).matches();
            assertThat(Identifiers.isCanonicalUuid(candidate))
                    .as("UUID: '%s'", candidate)
                    .isEqualTo(isUuid);
            assertThat(Identifiers.isDnsLabel(candidate))
                    .as("DNS label: '%s'", candidate)
                    .isEqualTo(isLabel);
            uuids += isUuid ? 1 : 0;
            labels += isLabel ? 1 : 0;
        }
        assertThat(uuids).as("valid UUIDs among the candidates").isGreaterThan(30);
        assertThat(labels).as("valid DNS labels among the candidates").isGreaterThan(500);
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
