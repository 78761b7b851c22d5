package dev.sandgate.driver.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.Identifiers;
import dev.sandgate.spi.SandboxRef;
import org.junit.jupiter.api.Test;

class ResourceNamesTest {
    private static final String DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";

    private static SandboxRef ref(String workspace, String name) {
        return new SandboxRef(Identifiers.newSandboxId(), workspace, name);
    }

    @Test
    void aSharedNamespaceNameStartsWithTheWorkspaceAndName() {
        assertThat(ResourceNames.sandboxName(true, ref("team", "notebook"))).matches("team-notebook-[0-9a-f]{8}");
    }

    @Test
    void longestWorkspaceAndNameStillGiveADnsLabel() {
        SandboxRef longest = ref("w".repeat(63), "n".repeat(63));

        String name = ResourceNames.sandboxName(true, longest);

        assertThat(name).hasSizeLessThanOrEqualTo(63).matches(DNS_LABEL);
    }

    @Test
    void namesDoNotDependOnTheIdSoASecondSandboxOfTheSameNameCollides() {
        assertThat(ResourceNames.sandboxName(true, ref("team", "notebook")))
                .isEqualTo(ResourceNames.sandboxName(true, ref("team", "notebook")));
    }

    @Test
    void workspaceAndNameSplitDifferentlyGiveDifferentNames() {
        assertThat(ResourceNames.sandboxName(true, ref("a-b", "c")))
                .isNotEqualTo(ResourceNames.sandboxName(true, ref("a", "b-c")));
    }

    @Test
    void longNamesThatShareTheirCutPrefixStayDistinct() {
        String workspace = "w".repeat(63);
        assertThat(ResourceNames.sandboxName(true, ref(workspace, "n".repeat(62) + "a")))
                .isNotEqualTo(ResourceNames.sandboxName(true, ref(workspace, "n".repeat(62) + "b")));
    }

    @Test
    void aNamespacePerWorkspaceKeepsTheSandboxsOwnName() {
        assertThat(ResourceNames.sandboxName(false, ref("team", "notebook"))).isEqualTo("notebook");
    }

    @Test
    void workspaceNamespacesArePrefixedAndFitADnsLabel() {
        assertThat(ResourceNames.workspaceNamespace("sandgate-", "team")).isEqualTo("sandgate-team");
        assertThat(ResourceNames.workspaceNamespace("sandgate-", "w".repeat(63)))
                .hasSizeLessThanOrEqualTo(63)
                .matches(DNS_LABEL)
                .isNotEqualTo(ResourceNames.workspaceNamespace("sandgate-", "w".repeat(62) + "x"));
    }

    @Test
    void theWorkspaceClaimIsNamedAsTheAgentSandboxControllerNamesIt() {
        assertThat(ResourceNames.workspaceClaimName("team-notebook-1234abcd"))
                .isEqualTo("workspace-team-notebook-1234abcd");
    }
}
