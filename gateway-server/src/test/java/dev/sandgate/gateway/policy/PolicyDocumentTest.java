package dev.sandgate.gateway.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandgate.gateway.error.ErrorReason;
import dev.sandgate.gateway.error.GatewayException;
import dev.sandgate.spi.LaunchPolicy;
import dev.sandgate.spi.NetworkMode;
import dev.sandgate.spi.PolicyField;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class PolicyDocumentTest {
    @Test
    @DisplayName("documents that mean the same policy have the same canonical bytes and digest")
    void equivalentDocumentsShareTheDigest() {
        PolicyDocument a = PolicyDocument.parse(
                "{\"static\":{\"drop_capabilities\":[\"NET_RAW\",\"ALL\"],\"memory_limit_bytes\":512}}");
        PolicyDocument b = PolicyDocument.parse(
                "{ \"version\": 1, \"dynamic\": {}, \"static\": {\"memory_limit_bytes\":"
                        + " 512.0, \"network_mode\": \"none\", \"drop_capabilities\": [\"ALL\", \"NET_RAW\", \"ALL\"]}}");

        assertThat(a.canonicalText()).isEqualTo(b.canonicalText());
        assertThat(a.digest())
                .isEqualTo(b.digest())
                .isEqualTo(LaunchPolicy.digestOf(a.canonicalDocument().toByteArray()));
    }

    @Test
    @DisplayName("an empty document is the default policy: network none, nothing else restricted")
    void emptyIsDefault() {
        PolicyDocument empty = PolicyDocument.parse("");

        assertThat(empty).isEqualTo(PolicyDocument.DEFAULT);
        assertThat(empty.staticPolicy().networkMode()).isEqualTo(NetworkMode.NONE);
        assertThat(empty.toLaunchPolicy(1).usedFields()).containsExactly(PolicyField.NETWORK_NONE);
    }

    @Test
    @DisplayName("typed records carry every field")
    void typedRecords() {
        PolicyDocument document = PolicyDocument.parse("{\"static\":{\"read_only_root_filesystem\":true,"
                + "\"network_mode\":\"default\",\"no_new_privileges\":true,\"cpu_limit_millis\":500,"
                + "\"pids_limit\":64},\"dynamic\":{\"network_allow_list\":[\"b.example\",\"a.example:443\"]}}");

        assertThat(document.staticPolicy().readOnlyRootFilesystem()).isTrue();
        assertThat(document.staticPolicy().networkMode()).isEqualTo(NetworkMode.DEFAULT);
        assertThat(document.staticPolicy().noNewPrivileges()).isTrue();
        assertThat(document.staticPolicy().cpuLimitMillis()).isEqualTo(500);
        assertThat(document.staticPolicy().pidsLimit()).isEqualTo(64);
        assertThat(document.dynamicPolicy().networkAllowList()).containsExactly("a.example:443", "b.example");
    }

    @Test
    @DisplayName("a stored canonical document reads back to the same digest")
    void roundTrip() {
        PolicyDocument document = PolicyDocument.parse("{\"static\":{\"pids_limit\":9}}");

        assertThat(PolicyDocument.fromCanonical(document.canonicalDocument()).digest())
                .isEqualTo(document.digest());
    }

    @Test
    @DisplayName("static and dynamic differences are told apart")
    void staticDifference() {
        PolicyDocument base = PolicyDocument.parse("{\"static\":{\"pids_limit\":9}}");

        assertThat(PolicyDocument.parse("{\"static\":{\"pids_limit\":9},\"dynamic\":{\"network_allow_list\":[\"x\"]}}")
                        .staticDiffers(base))
                .isFalse();
        assertThat(PolicyDocument.parse("{\"static\":{\"pids_limit\":10}}").staticDiffers(base))
                .isTrue();
    }

    private static String fieldOf(String json) {
        try {
            PolicyDocument.parse(json);
        } catch (GatewayException e) {
            assertThat(e.reason()).isEqualTo(ErrorReason.INVALID_FIELD);
            return e.field().orElseThrow();
        }
        throw new AssertionError("accepted " + json);
    }

    @Test
    @DisplayName("invalid documents name the offending field")
    void invalidDocumentsNameTheField() {
        assertThat(fieldOf("{\"static\":{\"memory_limit_bytes\":-1}}")).isEqualTo("policy.static.memory_limit_bytes");
        assertThat(fieldOf("{\"static\":{\"memory_limit_bytes\":1.5}}")).isEqualTo("policy.static.memory_limit_bytes");
        assertThat(fieldOf("{\"static\":{\"pids_limit\":9007199254740993}}")).isEqualTo("policy.static.pids_limit");
        assertThat(fieldOf("{\"static\":{\"network_mode\":\"host\"}}")).isEqualTo("policy.static.network_mode");
        assertThat(fieldOf("{\"static\":{\"drop_capabilities\":[\"CAP_NET_RAW\"]}}"))
                .isEqualTo("policy.static.drop_capabilities");
        assertThat(fieldOf("{\"static\":{\"read_only_root_filesystem\":\"yes\"}}"))
                .isEqualTo("policy.static.read_only_root_filesystem");
        assertThat(fieldOf("{\"dynamic\":{\"network_allow_list\":[\"a b\"]}}"))
                .isEqualTo("policy.dynamic.network_allow_list");
        assertThat(fieldOf("{\"version\":2}")).isEqualTo("policy.version");
        assertThat(fieldOf("{\"extra\":1}")).isEqualTo("policy.extra");
        assertThat(fieldOf("[]")).isEqualTo("policy");
        assertThat(fieldOf("{")).isEqualTo("policy.document");
        assertThat(fieldOf("{\"dynamic\":{\"network_allow_list\":[\"" + "x".repeat(70_000) + "\"]}}"))
                .isEqualTo("policy.document");
    }

    @Test
    @DisplayName("the digest is sha256: and 64 lowercase hex characters")
    void digestShape() {
        assertThat(PolicyDocument.DEFAULT.digest()).matches("sha256:[0-9a-f]{64}");
        assertThatThrownBy(() -> PolicyDocument.fromCanonical(com.google.protobuf.ByteString.copyFromUtf8("{ }")))
                .isInstanceOf(IllegalStateException.class);
    }
}
