package dev.sandgate.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LaunchPolicyTest {
    private static final byte[] DOCUMENT = "{\"static\":{}}".getBytes(StandardCharsets.UTF_8);

    private static LaunchPolicy policy(String digest, byte[] document) {
        return new LaunchPolicy(1, digest, document, StaticPolicy.DEFAULT, DynamicPolicy.EMPTY);
    }

    private static DriverException refusal(Runnable call) {
        DriverException refused = catchThrowableOfType(DriverException.class, call::run);
        assertThat(refused).as("a DriverException").isNotNull();
        assertThat(refused.code()).isEqualTo(DriverErrorCode.INVALID_ARGUMENT);
        return refused;
    }

    @Test
    void theDigestIsSha256OfTheDocumentInLowercaseHex() {
        // sha256 of the empty input, a published test vector
        assertThat(LaunchPolicy.digestOf(new byte[0]))
                .isEqualTo("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assertThat(policy(LaunchPolicy.digestOf(DOCUMENT), DOCUMENT).digest()).matches("sha256:[0-9a-f]{64}");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "sha256:",
                "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
                "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85",
                "sha512:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
            })
    void aMalformedDigestIsRefusedNamingTheField(String digest) {
        assertThat(refusal(() -> policy(digest, DOCUMENT)).getMessage()).startsWith("policy.digest: ");
    }

    @Test
    void aDigestOfOtherBytesIsRefused() {
        String other = LaunchPolicy.digestOf("{}".getBytes(StandardCharsets.UTF_8));

        assertThat(refusal(() -> policy(other, DOCUMENT)).getMessage())
                .isEqualTo("policy.digest: does not match the canonical document");
    }

    @Test
    void theDocumentIsCopiedInAndOut() {
        byte[] document = DOCUMENT.clone();
        LaunchPolicy policy = policy(LaunchPolicy.digestOf(document), document);

        document[0] = 'X';
        policy.canonicalDocument()[0] = 'Y';

        assertThat(policy.canonicalDocument()).isEqualTo(DOCUMENT);
        assertThat(policy.canonicalText()).isEqualTo("{\"static\":{}}");
    }

    @Test
    void aDocumentOver64KibIsRefused() {
        byte[] large = new byte[LaunchPolicy.MAX_DOCUMENT_BYTES + 1];

        assertThat(refusal(() -> policy(LaunchPolicy.digestOf(large), large)).getMessage())
                .startsWith("policy.document: ");
    }

    @Test
    void theRevisionIsAtLeastOne() {
        assertThat(refusal(() -> new LaunchPolicy(
                                0,
                                LaunchPolicy.digestOf(DOCUMENT),
                                DOCUMENT,
                                StaticPolicy.DEFAULT,
                                DynamicPolicy.EMPTY))
                        .getMessage())
                .startsWith("policy.revision: ");
    }

    @Test
    void equalPoliciesCompareTheirDocumentsByContent() {
        LaunchPolicy one = policy(LaunchPolicy.digestOf(DOCUMENT), DOCUMENT.clone());
        LaunchPolicy two = policy(LaunchPolicy.digestOf(DOCUMENT), DOCUMENT.clone());

        assertThat(one).isEqualTo(two).hasSameHashCodeAs(two);
        assertThat(one.toString()).contains(one.digest()).doesNotContain("[B@");
    }

    @Test
    void aLaunchInputHasAGenerationOfAtLeastOne() {
        LaunchPolicy policy = policy(LaunchPolicy.digestOf(DOCUMENT), DOCUMENT);

        assertThat(new LaunchInput(1, policy).generation()).isEqualTo(1);
        assertThat(refusal(() -> new LaunchInput(0, policy)).getMessage()).startsWith("launch.generation: ");
    }

    @Test
    void usedFieldsAreWhatThePolicyRestricts() {
        var restrictive = new StaticPolicy(true, NetworkMode.NONE, Set.of("ALL"), true, 1, 1, 1);
        LaunchPolicy policy = new LaunchPolicy(
                1, LaunchPolicy.digestOf(DOCUMENT), DOCUMENT, restrictive, new DynamicPolicy(List.of("example.org")));

        assertThat(policy.usedFields())
                .as("an allow-list under network none restricts nothing more")
                .doesNotContain(PolicyField.NETWORK_ALLOW_LIST)
                .hasSize(PolicyField.values().length - 1);
    }
}
