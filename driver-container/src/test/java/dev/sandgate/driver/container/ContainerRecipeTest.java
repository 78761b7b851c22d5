package dev.sandgate.driver.container;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandgate.spi.ResourceRequests;
import dev.sandgate.spi.SandboxSpec;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ContainerRecipeTest {
    private static final SandboxSpec SPEC = new SandboxSpec(
            "busybox",
            List.of("/bin/sh", "-c"),
            List.of("exec sleep 60"),
            Map.of("TOKEN", "s3cret-value", "A_FIRST", "1"),
            Map.of("team", "blue"),
            ResourceRequests.NONE);

    @Test
    void aSpecBecomesEntrypointCmdAndSortedEnvironmentEntries() {
        ContainerRecipe recipe = ContainerRecipe.of(SPEC);

        assertThat(recipe.entrypoint()).containsExactly("/bin/sh", "-c");
        assertThat(recipe.cmd()).containsExactly("exec sleep 60");
        assertThat(recipe.environment()).containsExactly("A_FIRST=1", "TOKEN=s3cret-value");
        assertThat(recipe.userLabels()).isEqualTo(Map.of("team", "blue"));
    }

    @Test
    void environmentValuesNeverAppearInItsText() {
        assertThat(ContainerRecipe.of(SPEC).toString()).contains("TOKEN").doesNotContain("s3cret-value");
    }
}
