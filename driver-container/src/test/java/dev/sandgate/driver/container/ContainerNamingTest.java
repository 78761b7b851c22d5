package dev.sandgate.driver.container;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.SandboxRef;
import org.junit.jupiter.api.Test;

class ContainerNamingTest {
    private static final String ID = "3f2a9c1e-7b4d-4e8a-9c0f-1234567890ab";

    @Test
    void containerNameCarriesWorkspaceNameShortIdAndGeneration() {
        var ref = new SandboxRef(ID, "team-a", "agent");

        assertThat(ContainerNaming.containerName(ref, 3, 1)).isEqualTo("sandgate-team-a-agent-3f2a9c1e-g3");
    }

    @Test
    void relaunchesOfOneGenerationGetNumberedNames() {
        var ref = new SandboxRef(ID, "team-a", "agent");

        assertThat(ContainerNaming.containerName(ref, 3, 2)).isEqualTo("sandgate-team-a-agent-3f2a9c1e-g3-2");
    }

    @Test
    void longWorkspacesAndNamesAreCutSoThatNamesStayWithin63Characters() {
        var ref = new SandboxRef(ID, "w".repeat(62) + "1", "n".repeat(62) + "2");

        String name = ContainerNaming.containerName(ref, 123_456, 99);

        assertThat(name)
                .hasSizeLessThanOrEqualTo(63)
                .startsWith("sandgate-wwwwwwwwwwww-nnnnnnnnnnnnnnnnnnnn-3f2a9c1e-");
    }

    @Test
    void aCutNeverLeavesATrailingDashBeforeTheSeparator() {
        var ref = new SandboxRef(ID, "abcdefghijk-xyz", "agent");

        assertThat(ContainerNaming.containerName(ref, 1, 1)).isEqualTo("sandgate-abcdefghijk-agent-3f2a9c1e-g1");
    }

    @Test
    void theSameNameInTwoSandboxesGivesTwoContainerNames() {
        var first = new SandboxRef(ID, "team-a", "agent");
        var second = new SandboxRef("9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b", "team-a", "agent");

        assertThat(ContainerNaming.containerName(first, 1, 1))
                .isNotEqualTo(ContainerNaming.containerName(second, 1, 1));
    }

    @Test
    void theWorkspaceVolumeIsNamedAfterTheFullSandboxId() {
        assertThat(ContainerNaming.volumeName(ID)).isEqualTo("sandgate-" + ID + "-workspace");
    }
}
